//! The one handler shape of the simulated Google methods: a method is a plain function
//! of the simulator and the call's extractors (path, query, body, ...) that returns its
//! answer; [`Service::method`] turns it into the axum handler registered under its
//! Google method name, run through [`Sim::serve_forcing`].
//!
//! Invariant: a method registered here is answered only after the armed faults are
//! checked (a faulted call changes nothing, and reaches the function only when it is of
//! a kind the service forwards and the method is registered as [`Forcing`]), and its
//! response is tagged with its Google method name either way.

use axum::extract::{FromRequest, State};
use axum::handler::Handler;
use axum::response::{IntoResponse, Response};

use crate::sim::Sim;
use crate::sim::error::Flavor;
use crate::sim::faults::FaultKind;

/// One simulated Google service: its name (as faults name it), its error flavour, and
/// the fault kinds its `forcing` methods report through their own answer (a failed
/// operation) instead of an HTTP error.
#[derive(Debug, Clone, Copy)]
pub struct Service {
    pub name: &'static str,
    pub flavor: Flavor,
    pub forwarded: &'static [FaultKind],
}

/// A method that is handed an armed fault of a kind its service forwards (its second
/// argument, `Option<FaultKind>`) to report through its answer.
#[derive(Debug, Clone, Copy)]
pub struct Forcing<A>(pub A);

/// A function that answers a call from the simulator and the call's extractors `T` (a
/// tuple).
pub trait Answer<T>: Copy + Send + Sync + 'static {
    /// Whether it is handed the forwarded fault kinds ([`Forcing`]).
    const FORCING: bool;

    fn answer(self, sim: &Sim, forced: Option<FaultKind>, args: T) -> Response;
}

macro_rules! answers {
    ($($t:ident),+) => {
        #[allow(non_snake_case)]
        impl<A, R, $($t),+> Answer<($($t,)+)> for A
        where
            A: Fn(&Sim, $($t),+) -> R + Copy + Send + Sync + 'static,
            R: IntoResponse,
        {
            const FORCING: bool = false;

            fn answer(self, sim: &Sim, _: Option<FaultKind>, ($($t,)+): ($($t,)+)) -> Response {
                self(sim, $($t),+).into_response()
            }
        }

        #[allow(non_snake_case)]
        impl<A, R, $($t),+> Answer<($($t,)+)> for Forcing<A>
        where
            A: Fn(&Sim, Option<FaultKind>, $($t),+) -> R + Copy + Send + Sync + 'static,
            R: IntoResponse,
        {
            const FORCING: bool = true;

            fn answer(self, sim: &Sim, forced: Option<FaultKind>, ($($t,)+): ($($t,)+)) -> Response {
                (self.0)(sim, forced, $($t),+).into_response()
            }
        }
    };
}

answers!(T1);
answers!(T1, T2);
answers!(T1, T2, T3);
answers!(T1, T2, T3, T4);

impl Service {
    /// A service whose methods report every fault as an HTTP error.
    pub const fn new(name: &'static str, flavor: Flavor) -> Service {
        Service {
            name,
            flavor,
            forwarded: &[],
        }
    }

    /// The handler of Google method `method`, answered by `answer` (a [`Forcing`] one is
    /// handed an armed fault of a kind the service forwards).
    pub fn method<T, M, A>(
        self,
        method: &'static str,
        answer: A,
    ) -> impl Handler<(M, State<Sim>, T), Sim>
    where
        A: Answer<T>,
        T: FromRequest<Sim, M> + Send + 'static,
        M: 'static,
    {
        let service = (self.name, self.flavor);
        let forwarded = if A::FORCING { self.forwarded } else { &[] };
        move |State(sim): State<Sim>, args: T| async move {
            sim.serve_forcing(service, method, forwarded, |forced| {
                answer.answer(&sim, forced, args)
            })
            .await
        }
    }
}
