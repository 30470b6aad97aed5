//! Compute Engine's list pages (`ZoneList`, `AcceleratorTypeList`, `ReservationList`,
//! ...): one generic page type, since these schemas differ only in their item type
//! (Storage's `objects.list` pages are read through it too when only their `items` are
//! wanted: the same `items` and `nextPageToken`).
//!
//! Invariant: the fields are those every such Compute list schema has (`kind`, `id`,
//! `items`, `nextPageToken`, `selfLink`); unset ones are not sent, and a page without
//! `items` reads as empty. [`Page`] is what a client follows from page to page.

use serde::{Deserialize, Serialize};

/// One page of a Compute `*.list` (`items` of `T`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct List<T> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub self_link: Option<String>,
}

// By hand: the derive would require `T: Default`, which an empty page does not need.
impl<T> Default for List<T> {
    fn default() -> List<T> {
        List {
            kind: None,
            id: None,
            items: Vec::new(),
            next_page_token: None,
            self_link: None,
        }
    }
}

/// A page of a paged list: its items and the token of the next page (`None` or empty
/// on the last page).
pub trait Page {
    type Item;
    fn into_parts(self) -> (Vec<Self::Item>, Option<String>);
}

impl<T> Page for List<T> {
    type Item = T;
    fn into_parts(self) -> (Vec<T>, Option<String>) {
        (self.items, self.next_page_token)
    }
}
