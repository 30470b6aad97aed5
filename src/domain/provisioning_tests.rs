//! The provisioning rules: what each mode implies and every contradiction refused.

use super::*;
use crate::domain::accelerators::testing::acc;

fn req<'a>(mode: Option<&'a str>) -> Request<'a> {
    Request {
        provisioning: mode,
        ..Request::default()
    }
}

/// A request naming `mode`, with `set` applied.
fn with<'a>(mode: &'a str, set: impl FnOnce(&mut Request<'a>)) -> Request<'a> {
    let mut r = req(Some(mode));
    set(&mut r);
    r
}

#[test]
fn modes_are_implied_by_the_old_fields() {
    let r = resolve(&acc("l4"), &req(None)).unwrap();
    assert_eq!(r.mode, Provisioning::OnDemand);
    let r = resolve(&acc("l4:spot"), &req(None)).unwrap();
    assert_eq!(r.mode, Provisioning::Spot);
    let r = resolve(
        &acc("l4"),
        &Request {
            spot: Some(true),
            ..req(None)
        },
    )
    .unwrap();
    assert_eq!((r.mode, r.spot), (Provisioning::Spot, Some(true)));
    let r = resolve(
        &acc("a100"),
        &Request {
            reservation: Some("res-1"),
            ..req(None)
        },
    )
    .unwrap();
    assert_eq!(r.mode, Provisioning::Reservation);
    assert_eq!(r.reservation.as_deref(), Some("res-1"));
    // Without a mode, the old fields' contradictions are left to the pool rules and
    // their own reasons (SPOT_WITH_RESERVATION, SPOT_CONFLICT).
    let r = Request {
        spot: Some(false),
        reservation: Some("r"),
        ..req(None)
    };
    let r = resolve(&acc("l4:spot"), &r).unwrap();
    assert_eq!((r.mode, r.spot), (Provisioning::Spot, Some(false)));
}

#[test]
fn explicit_modes_set_spot_and_check_the_reservation() {
    let r = resolve(&acc("l4"), &req(Some("SPOT"))).unwrap();
    assert_eq!(r.spot, Some(true));
    let e = resolve(&acc("l4"), &req(Some("RESERVATION"))).unwrap_err();
    assert_eq!(e.reason(), "RESERVATION_REQUIRED");
    let e = resolve(&acc("l4"), &req(Some("spot"))).unwrap_err();
    assert_eq!(e.reason(), "INVALID_PROVISIONING");
    assert!(e.to_string().contains("FLEX_START"), "{e}");
    let r = resolve(&acc("h100x8"), &req(Some("FLEX_START"))).unwrap();
    assert_eq!((r.mode, r.spot), (Provisioning::FlexStart, Some(false)));
    assert!(r.mode.is_flex_start() && Provisioning::Queued.is_flex_start());
    assert_eq!(default_max_run(r.mode).as_deref(), Some("604800s"));
    assert_eq!(default_max_run(Provisioning::Spot), None);
}

#[test]
fn contradictions_are_refused_with_the_field_named() {
    let cases: Vec<(&str, Request<'_>, &str)> = vec![
        ("l4", with("SPOT", |r| r.spot = Some(false)), "spot: false"),
        ("l4:spot", req(Some("ON_DEMAND")), "spot"),
        (
            "l4",
            with("ON_DEMAND", |r| r.reservation = Some("r")),
            "reservation",
        ),
        (
            "l4",
            with("SPOT", |r| r.reservation = Some("r")),
            "reservation",
        ),
        ("l4", with("RESERVATION", |r| r.spot = Some(true)), "spot"),
        (
            "l4",
            with("FLEX_START", |r| r.reservation = Some("r")),
            "reservation",
        ),
        ("l4", with("QUEUED", |r| r.spot = Some(true)), "spot"),
        ("l4:spot", req(Some("FLEX_START")), "spot"),
        ("l4", with("FLEX_START", |r| r.failover = true), "failover"),
        ("l4", with("ON_DEMAND", |r| r.failover = true), "failover"),
        ("l4", with("QUEUED", |r| r.min_nodes = 2), "minNodes"),
    ];
    for (a, r, field) in cases {
        let e = resolve(&acc(a), &r).unwrap_err();
        assert_eq!(e.reason(), "PROVISIONING_CONFLICT", "{a} {r:?}: {e}");
        assert!(e.to_string().contains(field), "{a} {r:?}: {e}");
    }
    // A failover pair may still consume a reservation on its on-demand side.
    let r = Request {
        failover: true,
        reservation: Some("r"),
        ..req(Some("RESERVATION"))
    };
    assert!(resolve(&acc("l4"), &r).is_ok());
}

#[test]
fn run_durations_are_whole_seconds_and_flex_start_stops_at_seven_days() {
    let with = |mode, d| Request {
        max_run_duration: Some(d),
        ..req(Some(mode))
    };
    let r = resolve(&acc("l4"), &with("FLEX_START", "3600s")).unwrap();
    assert_eq!(r.max_run_duration.as_deref(), Some("3600s"));
    assert!(resolve(&acc("l4"), &with("QUEUED", "604800s")).is_ok());
    let e = resolve(&acc("l4"), &with("QUEUED", "604801s")).unwrap_err();
    assert_eq!(e.reason(), "INVALID_MAX_RUN_DURATION");
    assert!(e.to_string().contains("604800s"), "{e}");
    assert!(resolve(&acc("l4"), &with("ON_DEMAND", "1209600s")).is_ok());
    for bad in ["1h", "0s", "-5s", "1.5s", "s", ""] {
        let e = resolve(&acc("l4"), &with("FLEX_START", bad)).unwrap_err();
        assert_eq!(e.reason(), "INVALID_MAX_RUN_DURATION", "{bad}");
    }
}

#[test]
fn flex_start_needs_a_supported_accelerator_and_a_recent_gke() {
    for a in ["t4", "v100", "tpu-v4-8"] {
        let e = resolve(&acc(a), &req(Some("FLEX_START"))).unwrap_err();
        assert_eq!(e.reason(), "FLEX_START_UNSUPPORTED", "{a}: {e}");
    }
    let e = resolve(&acc("v5e-16"), &req(Some("FLEX_START"))).unwrap_err();
    assert!(e.to_string().contains("QUEUED"), "{e}");
    assert!(resolve(&acc("v5e-16"), &req(Some("QUEUED"))).is_ok());
    assert!(resolve(&acc("v5e-8"), &req(Some("FLEX_START"))).is_ok());
    let gpu = Provisioning::FlexStart.min_version(&acc("l4")).unwrap();
    assert_eq!(gpu.to_string(), "1.32.2-gke.1652000");
    let tpu = Provisioning::Queued.min_version(&acc("v5e-16")).unwrap();
    assert_eq!(tpu.to_string(), "1.33.0-gke.1712000");
    assert_eq!(Provisioning::Spot.min_version(&acc("l4")), None);
    let old = GkeVersion::parse("1.32.1-gke.1000").unwrap();
    assert!(old < gpu && GkeVersion::parse("1.33.5-gke.1080000").unwrap() >= gpu);
}
