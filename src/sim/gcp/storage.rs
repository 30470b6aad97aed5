//! Simulated service (to be filled in).

use axum::Router;
use serde::Serialize;

use crate::sim::Sim;
use crate::sim::clock::Clock;
use crate::sim::world::World;

#[derive(Debug, Default, Serialize)]
pub struct State {}

pub fn routes() -> Router<Sim> {
    Router::new()
}

pub fn tick(_world: &mut World, _clock: &Clock) {}
