//! A service's long-running operations in creation order, with an index by name: a
//! poll finds its operation in one lookup, not a scan of every operation the simulator
//! ever started (with a thousand clusters in flight, the scans were most of its time).
//!
//! Invariant: an operation is only added through [`Operations::push`] and never removed
//! or renamed, so the index always points at the newest operation of each name.

use std::collections::HashMap;
use std::ops::{Deref, DerefMut};

use serde::Serialize;

/// An operation record that carries its name.
pub trait Named {
    fn name(&self) -> &str;
}

/// Operations in creation order (serialised as that list), indexed by name.
#[derive(Debug)]
pub struct Operations<T> {
    items: Vec<T>,
    by_name: HashMap<String, usize>,
}

impl<T> Default for Operations<T> {
    fn default() -> Self {
        Operations {
            items: Vec::new(),
            by_name: HashMap::new(),
        }
    }
}

impl<T: Named> Operations<T> {
    pub fn push(&mut self, op: T) {
        self.by_name.insert(op.name().to_owned(), self.items.len());
        self.items.push(op);
    }

    /// The newest operation named `name`.
    pub fn named(&self, name: &str) -> Option<&T> {
        self.by_name.get(name).map(|&i| &self.items[i])
    }
}

impl<T> Deref for Operations<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.items
    }
}

/// Records may change (their state moves on); the list itself only grows by `push`.
impl<T> DerefMut for Operations<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.items
    }
}

impl<T: Serialize> Serialize for Operations<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.items.serialize(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Op(&'static str, u32);
    impl Named for Op {
        fn name(&self) -> &str {
            self.0
        }
    }

    #[test]
    fn finds_the_newest_of_a_name_and_keeps_the_order() {
        let mut ops = Operations::default();
        ops.push(Op("a", 1));
        ops.push(Op("b", 2));
        ops.push(Op("a", 3));
        assert_eq!(ops.named("a").map(|o| o.1), Some(3));
        assert_eq!(ops.named("b").map(|o| o.1), Some(2));
        assert!(ops.named("c").is_none());
        ops[1].1 = 5;
        assert_eq!(ops.iter().map(|o| o.1).collect::<Vec<_>>(), [1, 5, 3]);
        assert_eq!(ops.named("b").map(|o| o.1), Some(5));
    }
}
