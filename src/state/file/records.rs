//! The store a state directory is, the same on every system: an update
//! takes the record's lock, clears what a killed writer left, reads the
//! record, and writes the change whole. What differs between systems (the
//! lock, the reads and the replacement) is the parent's `FileStore`.

use anyhow::Result;

use super::FileStore;
use super::names::Names;
use crate::state::store::{Change, Kind, Loaded, Patience, Store};

impl Store for FileStore {
    fn update_blob(
        &self,
        kind: &Kind,
        name: &str,
        patience: Patience,
        change: &mut Change<'_>,
    ) -> Result<()> {
        let names = Names::new(kind, name);
        let _lock = self.lock(&names, patience)?;
        self.remove_temporaries(&names);
        let loaded = self.load(&names);
        if let Some(value) = change(&loaded)? {
            let mut text = serde_json::to_vec_pretty(&value)?;
            text.push(b'\n');
            self.store(&names, &text)?;
        }
        Ok(())
    }

    /// Without the lock: every write replaces the file whole (a rename;
    /// `MoveFileExW` on Windows), so a read sees the old record or the new
    /// one, never half of one.
    fn read_blob(&self, kind: &Kind, name: &str) -> Result<Loaded> {
        Ok(self.load(&Names::new(kind, name)))
    }

    fn location(&self, kind: &Kind, name: &str) -> String {
        self.dir
            .join(Names::new(kind, name).json)
            .display()
            .to_string()
    }

    fn describe_record(&self, kind: &Kind, name: &str) -> String {
        self.location(kind, name)
    }
}
