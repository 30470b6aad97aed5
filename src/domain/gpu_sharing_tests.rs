//! Every GPU model's partition sizes, the client range, and every refusal.

use super::*;
use crate::domain::accelerators::testing::acc;

#[test]
fn every_gpu_model_takes_exactly_its_partition_sizes() {
    // GKE's documented partition sizes per model, as "size:partitions" (the oracle).
    let table: &[(&str, &str)] = &[
        ("a100", "1g.5gb:7 2g.10gb:3 3g.20gb:2 7g.40gb:1"),
        ("a100-80gb", "1g.10gb:7 2g.20gb:3 3g.40gb:2 7g.80gb:1"),
        ("h100", "1g.10gb:7 1g.20gb:4 2g.20gb:3 3g.40gb:2 7g.80gb:1"),
        (
            "h200",
            "1g.18gb:7 1g.35gb:4 2g.35gb:3 3g.71gb:2 4g.71gb:1 7g.141gb:1",
        ),
        (
            "b200",
            "1g.23gb:7 1g.45gb:4 2g.45gb:3 3g.90gb:2 4g.90gb:1 7g.180gb:1",
        ),
    ];
    let rows: Vec<(&str, Vec<(&str, u32)>)> = table
        .iter()
        .map(|(model, sizes)| {
            let sizes = sizes
                .split(' ')
                .map(|e| {
                    let (z, n) = e.split_once(':').unwrap();
                    (z, n.parse().unwrap())
                })
                .collect();
            (*model, sizes)
        })
        .collect();
    let every_size: Vec<&str> = rows
        .iter()
        .flat_map(|(_, s)| s.iter().map(|(z, _)| *z))
        .collect();
    for (model, sizes) in &rows {
        let a = acc(model);
        for (size, n) in sizes {
            let g = check(&a, Some(size), None).unwrap().unwrap();
            assert_eq!(g.partition, Some((*size, *n)), "{model} {size}");
            assert_eq!(g.units_per_gpu(), *n);
            assert_eq!(g.node_labels(), [(PARTITION_LABEL, size.to_string())]);
        }
        // Every other model's sizes are refused, naming this model's sizes.
        for other in every_size
            .iter()
            .filter(|z| !sizes.iter().any(|(s, _)| s == *z))
        {
            let e = check(&a, Some(other), None).unwrap_err();
            assert_eq!(e.reason(), "INVALID_PARTITION_SIZE", "{model} {other}");
            let valid: Vec<&str> = sizes.iter().map(|(s, _)| *s).collect();
            assert_eq!(e.valid_sizes(), Some(valid.join(", ").as_str()));
        }
    }
    // H100's 4g.40gb is not a size GKE's device plugin knows.
    assert!(check(&acc("h100"), Some("4g.40gb"), None).is_err());
}

#[test]
fn models_without_mig_and_tpus_are_refused() {
    for model in ["l4", "t4", "v100", "p4", "p100", "h100-mega"] {
        let e = check(&acc(model), Some("1g.5gb"), None).unwrap_err();
        assert!(matches!(e, SharingError::NoMig { .. }), "{model}: {e:?}");
        assert_eq!(e.reason(), "INVALID_PARTITION_SIZE");
        assert!(e.to_string().contains("nvidia-tesla-a100"), "{e}");
        // Whole GPUs of every model can be shared.
        let g = check(&acc(model), None, Some(("TIME_SHARING", 4)))
            .unwrap()
            .unwrap();
        assert_eq!(g.units_per_gpu(), 4);
    }
    let e = check(&acc("v5e-8"), None, Some(("TIME_SHARING", 2))).unwrap_err();
    assert_eq!(e.reason(), "INVALID_SHARING");
    assert!(e.to_string().contains("TPU"), "{e}");
    assert!(check(&acc("v5e-8"), Some("1g.5gb"), None).is_err());
    assert_eq!(check(&acc("v5e-8"), None, None), Ok(None));
    assert_eq!(check(&acc("l4"), Some("  "), None), Ok(None));
}

#[test]
fn clients_strategies_and_combinations() {
    let l4 = acc("l4");
    for bad in [0, 1, 49, 1000] {
        let e = check(&l4, None, Some(("MPS", bad))).unwrap_err();
        assert_eq!(e, SharingError::ClientsOutOfRange(bad));
        assert_eq!(e.reason(), "INVALID_SHARING");
    }
    for ok in [MIN_CLIENTS, 7, MAX_CLIENTS] {
        let g = check(&l4, None, Some(("MPS", ok))).unwrap().unwrap();
        assert_eq!(
            g.sharing,
            Some(Sharing {
                strategy: Strategy::Mps,
                max_clients_per_gpu: ok
            })
        );
        assert_eq!(
            g.node_labels(),
            [
                (STRATEGY_LABEL, "mps".to_owned()),
                (MAX_CLIENTS_LABEL, ok.to_string())
            ]
        );
    }
    let e = check(&l4, None, Some(("time-sharing", 4))).unwrap_err();
    assert_eq!(e, SharingError::BadStrategy("time-sharing".into()));
    // Time-sharing on partitions: each of the 7 slices shared by 3.
    let g = check(&acc("a100"), Some("1g.5gb"), Some(("TIME_SHARING", 3)))
        .unwrap()
        .unwrap();
    assert_eq!(g.units_per_gpu(), 21);
    assert_eq!(g.node_labels().len(), 3);
    assert_eq!(g.node_labels()[1].1, "time-sharing");
    let e = check(&acc("a100"), Some("1g.5gb"), Some(("MPS", 3))).unwrap_err();
    assert_eq!(e, SharingError::MpsWithPartitions);
}
