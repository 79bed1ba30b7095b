//! `retry`: run a command until it succeeds. Parse, run, exit.

fn main() {
    retry::app::run().terminate()
}
