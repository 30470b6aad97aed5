//! Table-driven tests: every row of the reference catalog, every spelling rule.

use super::testing::acc;
use super::*;

#[test]
fn every_gpu_row() {
    type Row = (&'static str, &'static str, &'static [(u32, &'static str)]);
    let rows: &[Row] = &[
        (
            "l4",
            "nvidia-l4",
            &[
                (1, "g2-standard-4"),
                (2, "g2-standard-24"),
                (4, "g2-standard-48"),
                (8, "g2-standard-96"),
            ],
        ),
        (
            "t4",
            "nvidia-tesla-t4",
            &[
                (1, "n1-standard-4"),
                (2, "n1-standard-8"),
                (4, "n1-standard-16"),
            ],
        ),
        (
            "v100",
            "nvidia-tesla-v100",
            &[
                (1, "n1-standard-8"),
                (2, "n1-standard-16"),
                (4, "n1-standard-32"),
                (8, "n1-standard-64"),
            ],
        ),
        (
            "a100",
            "nvidia-tesla-a100",
            &[
                (1, "a2-highgpu-1g"),
                (2, "a2-highgpu-2g"),
                (4, "a2-highgpu-4g"),
                (8, "a2-highgpu-8g"),
                (16, "a2-megagpu-16g"),
            ],
        ),
        (
            "a100-80gb",
            "nvidia-a100-80gb",
            &[
                (1, "a2-ultragpu-1g"),
                (2, "a2-ultragpu-2g"),
                (4, "a2-ultragpu-4g"),
                (8, "a2-ultragpu-8g"),
                (16, "a2-ultragpu-16g"),
            ],
        ),
        (
            "h100",
            "nvidia-h100-80gb",
            &[
                (1, "a3-highgpu-1g"),
                (2, "a3-highgpu-2g"),
                (4, "a3-highgpu-4g"),
                (8, "a3-highgpu-8g"),
            ],
        ),
        (
            "p4",
            "nvidia-tesla-p4",
            &[
                (1, "n1-standard-4"),
                (2, "n1-standard-8"),
                (4, "n1-standard-16"),
            ],
        ),
        (
            "p100",
            "nvidia-tesla-p100",
            &[
                (1, "n1-standard-4"),
                (2, "n1-standard-8"),
                (4, "n1-standard-16"),
            ],
        ),
        (
            "h100-mega",
            "nvidia-h100-mega-80gb",
            &[(8, "a3-megagpu-8g")],
        ),
        ("h200", "nvidia-h200-141gb", &[(8, "a3-ultragpu-8g")]),
        ("b200", "nvidia-b200", &[(8, "a4-highgpu-8g")]),
    ];
    for (name, gke, counts) in rows {
        for (n, mt) in *counts {
            for spelling in [
                format!("{name}x{n}"),
                format!("gpu-{name}x{n}"),
                format!("{gke}x{n}"),
                format!(" GPU-{}X{n} ", name.to_uppercase()),
            ] {
                let r = acc(&spelling);
                assert_eq!(
                    (r.kind, r.family, r.count),
                    (Kind::Gpu, *name, *n),
                    "{spelling}"
                );
                assert_eq!(r.gke_accelerator_type, *gke, "{spelling}");
                assert_eq!(r.machine_type, *mt, "{spelling}");
                assert_eq!(r.topology, None);
            }
        }
        // A name alone means one GPU (or the smallest count sold).
        let r = acc(name);
        assert_eq!(r.count, counts[0].0, "{name}");
        assert_eq!(acc(gke).family, *name, "alias {gke}");
    }
    assert_eq!(acc("a100x4").canonical(), "gpu-a100x4");
    assert_eq!(acc("l4").canonical(), "gpu-l4");
    assert_eq!(acc("gpu-l4x2").canonical(), "gpu-l4x2");
}

#[test]
fn every_tpu_row() {
    type Row = (
        &'static str,
        &'static str,
        u32,
        &'static [(u32, &'static str, &'static str, u32)],
    );
    let rows: &[Row] = &[
        (
            "v3",
            "tpu-v3-podslice",
            4,
            &[
                (4, "2x2", "ct3-hightpu-4t", 1),
                (16, "4x4", "ct3p-hightpu-4t", 4),
                (32, "4x8", "ct3p-hightpu-4t", 8),
                (64, "8x8", "ct3p-hightpu-4t", 16),
                (128, "8x16", "ct3p-hightpu-4t", 32),
                (256, "16x16", "ct3p-hightpu-4t", 64),
                (512, "16x32", "ct3p-hightpu-4t", 128),
                (1024, "32x32", "ct3p-hightpu-4t", 256),
                (2048, "32x64", "ct3p-hightpu-4t", 512),
            ],
        ),
        (
            "v4",
            "tpu-v4-podslice",
            4,
            &[
                (4, "2x2x1", "ct4p-hightpu-4t", 1),
                (8, "2x2x2", "ct4p-hightpu-4t", 2),
                (16, "2x2x4", "ct4p-hightpu-4t", 4),
                (32, "2x4x4", "ct4p-hightpu-4t", 8),
                (64, "4x4x4", "ct4p-hightpu-4t", 16),
                (128, "4x4x8", "ct4p-hightpu-4t", 32),
                (256, "4x8x8", "ct4p-hightpu-4t", 64),
                (512, "8x8x8", "ct4p-hightpu-4t", 128),
                (1024, "8x8x16", "ct4p-hightpu-4t", 256),
                (2048, "8x16x16", "ct4p-hightpu-4t", 512),
                (4096, "16x16x16", "ct4p-hightpu-4t", 1024),
            ],
        ),
        (
            "v5litepod",
            "tpu-v5-lite-podslice",
            4,
            &[
                (1, "1x1", "ct5lp-hightpu-1t", 1),
                (4, "2x2", "ct5lp-hightpu-4t", 1),
                (8, "2x4", "ct5lp-hightpu-8t", 1),
                (16, "4x4", "ct5lp-hightpu-4t", 4),
                (32, "4x8", "ct5lp-hightpu-4t", 8),
                (64, "8x8", "ct5lp-hightpu-4t", 16),
                (128, "8x16", "ct5lp-hightpu-4t", 32),
                (256, "16x16", "ct5lp-hightpu-4t", 64),
            ],
        ),
        (
            "v5p",
            "tpu-v5p-slice",
            8,
            &[
                (8, "2x2x2", "ct5p-hightpu-4t", 2),
                (16, "2x2x4", "ct5p-hightpu-4t", 4),
                (32, "2x4x4", "ct5p-hightpu-4t", 8),
            ],
        ),
        (
            "v6e",
            "tpu-v6e-slice",
            8,
            &[
                (8, "2x4", "ct6e-standard-4t", 2),
                (16, "4x4", "ct6e-standard-4t", 4),
            ],
        ),
    ];
    for (name, gke, default, shapes) in rows {
        for (chips, topo, mt, hosts) in *shapes {
            for spelling in [
                format!("{name}-{chips}"),
                format!("tpu-{name}-{chips}"),
                format!("{name}-{topo}"),
                format!("tpu-{name}-{topo}"),
                format!("{gke}-{chips}"),
            ] {
                let r = acc(&spelling);
                assert_eq!(
                    (r.kind, r.family, r.count),
                    (Kind::Tpu, *name, *chips),
                    "{spelling}"
                );
                assert_eq!(r.gke_accelerator_type, *gke);
                assert_eq!(r.machine_type, *mt, "{spelling}");
                assert_eq!(r.topology, Some(*topo));
                assert_eq!(r.hosts_per_slice, Some(*hosts));
                assert_eq!(r.per_node() * hosts, *chips);
            }
        }
        assert_eq!(acc(name).count, *default, "default of {name}");
        assert_eq!(acc(gke).family, *name);
    }
    assert_eq!(acc("v5e-16").canonical(), "tpu-v5litepod-16");
    assert_eq!(acc("v5e").family, "v5litepod");
    assert!(acc("v5e-16").is_multi_host());
    assert!(!acc("v5e-8").is_multi_host());
    assert_eq!(acc("v5e-8").per_node(), 8);
    assert_eq!(acc("v5e-1").per_node(), 1);
}

#[test]
fn shorthands_spot_and_cpu() {
    let r = acc("gpu");
    assert_eq!((r.family, r.count), ("l4", 1));
    let r = acc("tpu");
    assert_eq!((r.family, r.count), ("v5litepod", 4));
    for (n, family) in [
        (1, "h100"),
        (2, "h100"),
        (8, "h100"),
        (16, "a100-80gb"),
        (3, ""),
    ] {
        match parse(&format!("gpu:{n}")) {
            Ok(Choice::Accelerator(r)) => assert_eq!((r.family, r.count), (family, n)),
            Err(_) => assert_eq!(family, ""),
            other => panic!("{other:?}"),
        }
    }
    for (n, family) in [
        (8, "v6e"),
        (16, "v6e"),
        (32, "v5p"),
        (4, "v5litepod"),
        (1, "v5litepod"),
        (64, "v5litepod"),
        (4096, "v4"),
        (2048, "v4"),
        (3, ""),
    ] {
        match parse(&format!("tpu:{n}")) {
            Ok(Choice::Accelerator(r)) => assert_eq!((r.family, r.count), (family, n), "tpu:{n}"),
            Err(_) => assert_eq!(family, "", "tpu:{n}"),
            other => panic!("{other:?}"),
        }
    }
    let r = acc("l4:spot");
    assert!(r.spot);
    assert_eq!(r.canonical(), "gpu-l4:spot");
    assert_eq!(r.base_name(), "gpu-l4");
    assert!(acc("v5e-16:spot").spot);
    assert_eq!(parse("cpu"), Ok(Choice::Cpu));
    assert_eq!(parse(" CPU "), Ok(Choice::Cpu));
    assert!(parse("cpu:spot").is_err());
    assert_eq!(acc("l4").pool_prefix(), "gpu-l4");
    assert_eq!(acc("v5e-16").pool_prefix(), "tpu-v5litepod");
}

#[test]
fn unknown_names_get_suggestions() {
    let e = parse("l5").unwrap_err();
    assert!(e.suggestions.iter().any(|s| s.starts_with("gpu-l4")), "{e}");
    let e = parse("a100x3").unwrap_err();
    assert!(e.reason.contains("1, 2, 4, 8, 16"), "{e}");
    let e = parse("v5e-12").unwrap_err();
    assert!(e.reason.contains("16 (4x4)"), "{e}");
    let e = parse("v5litepd-16").unwrap_err();
    assert!(
        e.suggestions.contains(&"tpu-v5litepod-16".to_string()),
        "{e}"
    );
    for bad in ["", "gpu-", "tpu-v9", "gpu:x", "tpu:", "h100x", "nvidia"] {
        assert!(parse(bad).is_err(), "{bad}");
    }
    assert!(e.to_string().contains("did you mean"));
}

#[test]
fn catalog_is_consistent() {
    for r in all() {
        assert_eq!(acc(&r.canonical()), r, "{} round-trips", r.canonical());
    }
}
