//! The one room for `unsafe` code that talks to the operating system.

pub(crate) mod fd;
