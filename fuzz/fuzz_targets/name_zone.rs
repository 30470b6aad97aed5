//! `ZoneName::parse` (the `{z}` of every cluster path): never a panic; it accepts exactly
//! the zones its rule (`us-central1-a`: region, hyphen, one letter) admits, at most 63
//! characters; what it accepts prints back as itself, and its region is the zone less its
//! last `-letter`.
#![no_main]

use kineticd::domain::ZoneName;

/// A zone's region is the zone less its last `-letter`.
fn region_is_zone_less_letter(s: &str) {
    if let Ok(z) = ZoneName::parse(s) {
        assert_eq!(format!("{}-{}", z.region(), &s[s.len() - 1..]), s);
    }
}

kineticd_fuzz::name_target!(
    ZoneName::parse,
    r"^[a-z]+-[a-z][a-z0-9]*[0-9]-[a-z]$",
    63,
    region_is_zone_less_letter
);
