//! A child process's standard output as lines over a channel, and reading those lines up
//! to the one that says the child is ready. Neither panics nor depends on a harness: the
//! tests' process harness uses it and the concurrency bench includes this file by path.

use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// The line `kineticd sim` prints once it listens (after its `export` lines).
pub const SIM_LISTENING: &str = "# kineticd simulator listening on ";

/// The lines `out` yields, sent over a channel by a thread of their own (which ends when
/// `out` closes or the receiver is dropped).
pub fn line_channel(out: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// The lines of `rx` up to and with the first that starts with `last`, within `wait`;
/// `Err` with the lines read so far when the wait ends (or the output closes) first.
pub fn lines_until(
    rx: &Receiver<String>,
    last: &str,
    wait: Duration,
) -> Result<Vec<String>, Vec<String>> {
    let deadline = Instant::now() + wait;
    let mut lines = Vec::new();
    loop {
        let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) else {
            return Err(lines);
        };
        let done = line.starts_with(last);
        lines.push(line);
        if done {
            return Ok(lines);
        }
    }
}
