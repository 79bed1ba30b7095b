//! A state directory that is not there yet, opened only to read: it holds
//! no records, and reading it makes nothing (`--circuit-status` before the
//! first run, or on a read-only file system).

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::Names;
use crate::state::store::{Change, Kind, Loaded, Patience, Store};

pub(super) struct AbsentDir {
    dir: PathBuf,
}

impl AbsentDir {
    pub(super) fn new(dir: &Path) -> AbsentDir {
        AbsentDir {
            dir: dir.to_path_buf(),
        }
    }
}

impl Store for AbsentDir {
    fn update_blob(&self, _: &Kind, _: &str, _: Patience, _: &mut Change<'_>) -> Result<()> {
        bail!(
            "state directory {}: opened only to read, and not there",
            self.dir.display()
        )
    }

    fn read_blob(&self, _: &Kind, _: &str) -> Result<Loaded> {
        Ok(Loaded::Missing)
    }

    fn location(&self, kind: &Kind, name: &str) -> String {
        self.dir
            .join(Names::new(kind, name).json)
            .display()
            .to_string()
    }

    fn describe_record(&self, kind: &Kind, name: &str) -> String {
        format!("{} (nothing stored yet)", self.location(kind, name))
    }
}
