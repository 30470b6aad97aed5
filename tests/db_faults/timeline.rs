//! What happened when during a fault test: every entry is printed as it is made (so a
//! hung run shows how far it got) and the whole list once more at the end.

use std::time::{Duration, Instant};

pub struct Timeline {
    start: Instant,
    entries: Vec<(Duration, String)>,
}

impl Timeline {
    pub fn new() -> Timeline {
        Timeline {
            start: Instant::now(),
            entries: Vec::new(),
        }
    }

    /// Time since the start.
    pub fn now(&self) -> Duration {
        self.start.elapsed()
    }

    pub fn note(&mut self, what: impl Into<String>) {
        let at = self.now();
        let what = what.into();
        println!("[{:>6.2} s] {what}", at.as_secs_f64());
        self.entries.push((at, what));
    }

    /// Every entry, one a line.
    pub fn render(&self) -> String {
        self.entries
            .iter()
            .map(|(at, what)| format!("[{:>6.2} s] {what}", at.as_secs_f64()))
            .collect::<Vec<_>>()
            .join("\n")
    }
}
