//! Specific reservations a pool may be bound to, and the rules that decide whether a
//! reservation can hold the pool: same zone, same machine type, same accelerators, and
//! at least `minNodes` VMs free.
//!
//! Invariant: a [`ReservationRef`] is either a bare reservation name (the pool's own
//! project) or GKE's shared form `projects/OWNER/reservations/NAME`; it is written back
//! exactly as given, since GKE's `reservationAffinity.values` takes the same string.
//! [`check`] is pure: the caller reads the reservation and says what it found.

use std::fmt;

use super::names::ProjectId;

/// A reservation name: lowercase letters, digits and hyphens, starting with a letter,
/// not ending with a hyphen, at most 63.
fn valid_name(r: &str) -> bool {
    (1..=63).contains(&r.len())
        && r.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && r.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !r.ends_with('-')
}

/// A pool's `reservation`: `NAME` or `projects/OWNER/reservations/NAME`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReservationRef {
    /// The owner project when the reservation is shared from another project.
    pub owner: Option<String>,
    pub name: String,
}

impl ReservationRef {
    /// `None` when `s` is neither form.
    pub fn parse(s: &str) -> Option<ReservationRef> {
        let segs: Vec<&str> = s.split('/').collect();
        match segs.as_slice() {
            [name] if valid_name(name) => Some(ReservationRef {
                owner: None,
                name: (*name).to_owned(),
            }),
            ["projects", owner, "reservations", name]
                if valid_name(name) && ProjectId::parse(owner).is_ok() =>
            {
                Some(ReservationRef {
                    owner: Some((*owner).to_owned()),
                    name: (*name).to_owned(),
                })
            }
            _ => None,
        }
    }

    /// The project that owns the reservation, for a pool in `project`.
    pub fn owner_or<'a>(&'a self, project: &'a str) -> &'a str {
        self.owner.as_deref().unwrap_or(project)
    }
}

impl fmt::Display for ReservationRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.owner {
            Some(o) => write!(f, "projects/{o}/reservations/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// What a pool needs from its reservation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    /// The pool's zones (a reservation is zonal: it must be in one of them).
    pub zones: Vec<String>,
    pub machine_type: String,
    /// GPU type and GPUs per VM; `None` for TPU machine types (no guest accelerators).
    pub accelerator: Option<(String, i64)>,
    /// VMs that must be free for the pool to start (`minNodes`).
    pub min_nodes: i64,
}

/// What the reservation holds (names, not URLs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub zone: String,
    pub machine_type: String,
    /// Its `guestAccelerators`: (type, count per VM).
    pub accelerators: Vec<(String, i64)>,
    pub count: i64,
    pub in_use: i64,
}

/// Why a reservation cannot hold the pool (each maps to an API reason).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("{field} differs: the pool needs {wanted}, the reservation has {found}")]
    Mismatch {
        field: &'static str,
        wanted: String,
        found: String,
    },
    #[error("{count} VMs reserved, {in_use} in use: {needed} needed free")]
    Exhausted {
        count: i64,
        in_use: i64,
        needed: i64,
    },
}

impl Refusal {
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::Mismatch { .. } => "RESERVATION_MISMATCH",
            Refusal::Exhausted { .. } => "RESERVATION_EXHAUSTED",
        }
    }

    /// The error metadata of the refusal of reservation `r` in `zone`: those two, then
    /// field/wanted/found or count/inUseCount/needed.
    pub fn metadata(&self, r: &ReservationRef, zone: &str) -> Vec<(&'static str, String)> {
        let at = [("reservation", r.to_string()), ("zone", zone.to_owned())];
        let own = match self {
            Refusal::Mismatch {
                field,
                wanted,
                found,
            } => vec![
                ("field", (*field).to_owned()),
                ("wanted", wanted.clone()),
                ("found", found.clone()),
            ],
            Refusal::Exhausted {
                count,
                in_use,
                needed,
            } => vec![
                ("count", count.to_string()),
                ("inUseCount", in_use.to_string()),
                ("needed", needed.to_string()),
            ],
        };
        at.into_iter().chain(own).collect()
    }
}

/// The refusal's message for reservation `r`, with how to fix it.
pub fn refusal_message(r: &ReservationRef, zone: &str, refusal: &Refusal) -> String {
    match refusal {
        Refusal::Mismatch { field: "zone", .. } => format!(
            "reservation {r} is in zone {zone}, not in the pool's zone(s) ({refusal}): add the pool in {zone} (\"zones\": [\"{zone}\"]), or name a reservation in the pool's zone"
        ),
        Refusal::Mismatch { .. } => format!(
            "reservation {r} (zone {zone}) does not match the pool: {refusal}; choose the accelerator the reservation holds, or another reservation"
        ),
        Refusal::Exhausted { .. } => format!(
            "reservation {r} (zone {zone}) has too few free VMs: {refusal}; lower minNodes, free VMs of the reservation, or grow it (gcloud compute reservations update {} --zone={zone} --vm-count=...)",
            r.name
        ),
    }
}

/// The message when no zone searched has the reservation.
pub fn not_found_message(
    r: &ReservationRef,
    owner: &str,
    project: &str,
    searched: &[String],
) -> String {
    let shared = if owner == project {
        String::new()
    } else {
        format!(" or is not shared with project {project} (its shareSettings must list it)")
    };
    format!(
        "reservation {r} does not exist in project {owner} in zones {}{shared}: create it (gcloud compute reservations create), check its name, or drop \"reservation\"",
        searched.join(", ")
    )
}

/// The message when the reservation exists in `owner` but is not shared with `project`.
pub fn not_shared_message(r: &ReservationRef, owner: &str, zone: &str, project: &str) -> String {
    format!(
        "reservation {r} (project {owner}, zone {zone}) is not shared with project {project}: its owner shares it with gcloud compute reservations update {} --project={owner} --zone={zone} --add-share-with={project}",
        r.name
    )
}

/// The last segment of a URL or path (`.../zones/us-central1-a` -> `us-central1-a`).
pub fn last_segment(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

/// Machine types whose GPUs come with the machine (A2, A3, A4, G2, ...): a reservation
/// of one may list its GPUs or not. N1 VMs get their GPUs only from `guestAccelerators`.
fn gpus_bundled(machine_type: &str) -> bool {
    !machine_type.starts_with("n1-")
}

fn show_accelerators(a: &[(String, i64)]) -> String {
    if a.is_empty() {
        return "none".into();
    }
    a.iter()
        .map(|(t, n)| format!("{n} x {t}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether the reservation `found` can hold the pool `wanted`: zone, machine type,
/// accelerators (in that order), then free VMs.
pub fn check(wanted: &Wanted, found: &Found) -> Result<(), Refusal> {
    if !wanted.zones.iter().any(|z| z == &found.zone) {
        return Err(Refusal::Mismatch {
            field: "zone",
            wanted: wanted.zones.join(","),
            found: found.zone.clone(),
        });
    }
    if last_segment(&found.machine_type) != wanted.machine_type {
        return Err(Refusal::Mismatch {
            field: "machineType",
            wanted: wanted.machine_type.clone(),
            found: found.machine_type.clone(),
        });
    }
    let have: Vec<(String, i64)> = found
        .accelerators
        .iter()
        .map(|(t, n)| (last_segment(t).to_owned(), *n))
        .collect();
    let accelerators_ok = match &wanted.accelerator {
        None => have.is_empty(),
        Some(_) if have.is_empty() => gpus_bundled(&wanted.machine_type),
        Some(w) => have.len() == 1 && &have[0] == w,
    };
    if !accelerators_ok {
        let want: Vec<(String, i64)> = wanted.accelerator.iter().cloned().collect();
        return Err(Refusal::Mismatch {
            field: "guestAccelerators",
            wanted: show_accelerators(&want),
            found: show_accelerators(&have),
        });
    }
    let free = (found.count - found.in_use).max(0);
    if free < wanted.min_nodes {
        return Err(Refusal::Exhausted {
            count: found.count,
            in_use: found.in_use,
            needed: wanted.min_nodes,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wanted() -> Wanted {
        Wanted {
            zones: vec!["us-central1-a".into()],
            machine_type: "g2-standard-4".into(),
            accelerator: Some(("nvidia-l4".into(), 1)),
            min_nodes: 2,
        }
    }

    fn found() -> Found {
        Found {
            zone: "us-central1-a".into(),
            machine_type: "g2-standard-4".into(),
            accelerators: vec![("nvidia-l4".into(), 1)],
            count: 4,
            in_use: 1,
        }
    }

    #[test]
    fn names_and_shared_form() {
        let r = ReservationRef::parse("my-res").unwrap();
        assert_eq!((r.owner.as_deref(), r.owner_or("p1")), (None, "p1"));
        let s = ReservationRef::parse("projects/owner-proj/reservations/shared-1").unwrap();
        assert_eq!(s.owner.as_deref(), Some("owner-proj"));
        assert_eq!(s.owner_or("p1"), "owner-proj");
        assert_eq!(s.to_string(), "projects/owner-proj/reservations/shared-1");
        for bad in [
            "",
            "My-Res",
            "res-",
            "1res",
            "projects/owner-proj/reservations/",
            "projects/x/reservations/r",
            "projects/owner-proj/zones/us-central1-a/reservations/r",
            "owner-proj/reservations/r",
        ] {
            assert!(ReservationRef::parse(bad).is_none(), "{bad}");
        }
        assert!(ReservationRef::parse(&"a".repeat(64)).is_none());
    }

    #[test]
    fn a_matching_reservation_with_room_holds_the_pool() {
        assert_eq!(check(&wanted(), &found()), Ok(()));
        let mut f = found();
        f.machine_type =
            "https://x/compute/v1/projects/p/zones/us-central1-a/machineTypes/g2-standard-4".into();
        assert_eq!(check(&wanted(), &f), Ok(()));
        // G2 bundles its GPU: a reservation that does not list it still matches.
        f.accelerators.clear();
        assert_eq!(check(&wanted(), &f), Ok(()));
    }

    #[test]
    fn each_mismatch_names_its_field() {
        let field = |f: Found| match check(&wanted(), &f) {
            Err(Refusal::Mismatch { field, .. }) => field,
            other => panic!("{other:?}"),
        };
        let mut f = found();
        f.zone = "us-central1-b".into();
        assert_eq!(field(f), "zone");
        let mut f = found();
        f.machine_type = "g2-standard-8".into();
        assert_eq!(field(f), "machineType");
        let mut f = found();
        f.accelerators = vec![("nvidia-l4".into(), 2)];
        assert_eq!(field(f), "guestAccelerators");
        let mut f = found();
        f.accelerators = vec![("nvidia-tesla-t4".into(), 1)];
        let Err(Refusal::Mismatch {
            wanted: w,
            found: g,
            ..
        }) = check(&wanted(), &f)
        else {
            panic!()
        };
        assert_eq!(
            (w.as_str(), g.as_str()),
            ("1 x nvidia-l4", "1 x nvidia-tesla-t4")
        );
        // N1 gets GPUs only from guestAccelerators: a reservation without them is not one.
        let n1 = Wanted {
            machine_type: "n1-standard-4".into(),
            accelerator: Some(("nvidia-tesla-t4".into(), 1)),
            ..wanted()
        };
        let f = Found {
            machine_type: "n1-standard-4".into(),
            accelerators: vec![],
            ..found()
        };
        assert_eq!(check(&n1, &f).unwrap_err().reason(), "RESERVATION_MISMATCH");
        // A TPU pool wants no guest accelerators.
        let tpu = Wanted {
            machine_type: "ct5lp-hightpu-4t".into(),
            accelerator: None,
            ..wanted()
        };
        let f = Found {
            machine_type: "ct5lp-hightpu-4t".into(),
            accelerators: vec![],
            ..found()
        };
        assert_eq!(check(&tpu, &f), Ok(()));
    }

    #[test]
    fn too_few_free_vms_is_exhausted() {
        let f = Found {
            in_use: 3,
            ..found()
        };
        let e = check(&wanted(), &f).unwrap_err();
        assert_eq!(
            e,
            Refusal::Exhausted {
                count: 4,
                in_use: 3,
                needed: 2
            }
        );
        assert_eq!(e.reason(), "RESERVATION_EXHAUSTED");
        // More in use than reserved (Compute can report it while VMs go): none free.
        let f = Found {
            in_use: 9,
            ..found()
        };
        assert!(
            check(
                &Wanted {
                    min_nodes: 0,
                    ..wanted()
                },
                &f
            )
            .is_ok()
        );
        assert!(
            check(
                &Wanted {
                    min_nodes: 1,
                    ..wanted()
                },
                &f
            )
            .is_err()
        );
    }
}
