use super::*;

fn h100(min: u64, max: u64) -> PoolUse {
    PoolUse {
        type_name: "gpu-h100".into(),
        zones: vec!["us-central1-a".into()],
        provisioning: Provisioning::OnDemand,
        chips_per_node: 8,
        zone_count: 1,
        min_nodes: min,
        max_nodes: max,
        node_step: 1,
        hourly_per_node: 88.0,
        max_asked: false,
    }
}

fn capped(n: u32) -> Policy {
    Policy {
        max_accelerators: [("gpu-h100".to_owned(), n)].into(),
        ..Policy::default()
    }
}

fn add(p: PoolUse) -> Ask {
    Ask {
        pools: vec![p],
        ..Ask::default()
    }
}

#[test]
fn an_unset_policy_allows_everything() {
    let ask = add(h100(0, 10));
    assert_eq!(
        evaluate(&Policy::default(), &Usage::default(), &ask),
        PolicyCheck::allowed()
    );
}

#[test]
fn a_default_maximum_is_lowered_to_the_cap_in_whole_nodes() {
    let now = Usage::of(1, &[h100(0, 1)]);
    let (maxes, notes) = fit(&capped(30), &now, &add(h100(0, 10)));
    // 30 - 8 held = 22 left: two 8-GPU nodes.
    assert_eq!(maxes, vec![2]);
    assert!(notes[0].contains("from 10 to 2"), "{notes:?}");
    let mut fitted = h100(0, 2);
    fitted.max_nodes = maxes[0];
    assert_eq!(
        evaluate(&capped(30), &now, &add(fitted)).verdict,
        Verdict::Allowed
    );
}

#[test]
fn a_minimum_that_does_not_fit_is_denied_with_the_numbers() {
    let now = Usage::of(1, &[h100(0, 1)]);
    let ask = add(h100(3, 13));
    let (maxes, _) = fit(&capped(16), &now, &ask);
    assert_eq!(
        maxes,
        vec![13],
        "a pool whose minimum does not fit is not lowered"
    );
    let c = evaluate(&capped(16), &now, &ask);
    assert_eq!(c.verdict, Verdict::Denied);
    let d = c.denial().unwrap();
    assert_eq!(d.rule, "maxAccelerators.gpu-h100");
    assert_eq!((d.limit.as_str(), d.current.as_str()), ("16", "8"));
    assert_eq!(d.requested, (8 + 13 * 8).to_string());
}

#[test]
fn an_asked_maximum_is_never_lowered() {
    let mut p = h100(0, 10);
    p.max_asked = true;
    let (maxes, notes) = fit(&capped(16), &Usage::default(), &add(p.clone()));
    assert_eq!((maxes, notes.len()), (vec![10], 0));
    assert_eq!(
        evaluate(&capped(16), &Usage::default(), &add(p)).verdict,
        Verdict::Denied
    );
}

#[test]
fn multi_host_slices_are_lowered_in_whole_slices() {
    let tpu = PoolUse {
        type_name: "tpu-v5litepod".into(),
        chips_per_node: 4,
        node_step: 4,
        min_nodes: 0,
        max_nodes: 8,
        ..h100(0, 0)
    };
    let policy = Policy {
        max_accelerators: [("tpu-v5litepod".to_owned(), 20)].into(),
        ..Policy::default()
    };
    let (maxes, _) = fit(&policy, &Usage::default(), &add(tpu));
    assert_eq!(maxes, vec![4], "20 chips hold one 16-chip slice of 4 hosts");
}

#[test]
fn cost_above_the_approval_line_waits_and_above_the_cap_is_denied() {
    let policy = Policy {
        approval_above_hourly_cost_usd: Some(500.0),
        max_hourly_cost_usd: Some(2000.0),
        ..Policy::default()
    };
    let small = evaluate(&policy, &Usage::default(), &add(h100(0, 5)));
    assert_eq!(small.verdict, Verdict::Allowed, "{small:?}");
    let mid = evaluate(&policy, &Usage::default(), &add(h100(0, 10)));
    assert_eq!(mid.verdict, Verdict::NeedsApproval);
    assert_eq!(mid.violations[0].rule, "approvalAboveHourlyCostUsd");
    assert_eq!(mid.violations[0].requested, "880.00");
    let big = evaluate(&policy, &Usage::default(), &add(h100(0, 30)));
    assert_eq!(big.verdict, Verdict::Denied);
    assert_eq!(big.denial().unwrap().rule, "maxHourlyCostUsd");
}

#[test]
fn allowed_sets_name_what_they_refuse() {
    let policy = Policy {
        allowed_accelerators: vec!["gpu-l4".into()],
        allowed_zones: vec!["us-east1-b".into()],
        allowed_provisioning: vec![Provisioning::Spot],
        ..Policy::default()
    };
    let ask = Ask {
        new_cluster: Some("us-central1-a".into()),
        ..add(h100(0, 1))
    };
    let c = evaluate(&policy, &Usage::default(), &ask);
    let rules: Vec<&str> = c.violations.iter().map(|v| v.rule.as_str()).collect();
    assert_eq!(
        rules,
        ["allowedZones", "allowedAccelerators", "allowedProvisioning"]
    );
    assert_eq!(c.verdict, Verdict::Denied);
}

#[test]
fn a_request_that_adds_nothing_passes_a_tightened_policy() {
    let now = Usage::of(3, &[h100(0, 10), h100(0, 10)]);
    let policy = Policy {
        max_clusters: Some(1),
        ..capped(8)
    };
    let shrink = Ask {
        pools: vec![h100(0, 4)],
        replaces: vec![h100(0, 10)],
        ..Ask::default()
    };
    assert_eq!(evaluate(&policy, &now, &shrink).verdict, Verdict::Allowed);
    assert_eq!(
        evaluate(&policy, &now, &Ask::default()).verdict,
        Verdict::Allowed
    );
    let r = report(&policy, &now, &[]);
    assert!(r.iter().all(|l| l.exceeded), "{r:?}");
}

#[test]
fn bad_policies_are_refused_naming_the_field() {
    let types = vec!["gpu-l4".to_owned(), "gpu-h100".to_owned()];
    let bad = Policy {
        allowed_accelerators: vec!["gpu-l4x4".into()],
        ..Policy::default()
    };
    assert_eq!(
        bad.validate(&types).unwrap_err().field(),
        "allowedAccelerators"
    );
    let bad = Policy {
        max_hourly_cost_usd: Some(-1.0),
        ..Policy::default()
    };
    assert_eq!(
        bad.validate(&types).unwrap_err().field(),
        "maxHourlyCostUsd"
    );
    let bad = Policy {
        allowed_zones: vec!["us-central1".into()],
        ..Policy::default()
    };
    assert_eq!(bad.validate(&types).unwrap_err().field(), "allowedZones");
    assert!(capped(8).validate(&types).is_ok());
}
