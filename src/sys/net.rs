//! Local sockets: Unix's stream sockets (a Redis server's `unix://`).

pub(crate) use std::os::unix::net::UnixStream;
