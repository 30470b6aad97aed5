//! int64 fields: serialised as JSON strings (Google's mapping), read from a string or a
//! number. Use with `#[serde(with = "int64")]` or `#[serde(with = "int64::option")]`.

use serde::{Deserialize, Deserializer, Serializer};

#[derive(Deserialize)]
#[serde(untagged)]
enum Raw {
    Num(i64),
    Float(f64),
    Str(String),
}

fn to_i64<E: serde::de::Error>(r: Raw) -> Result<i64, E> {
    match r {
        Raw::Num(n) => Ok(n),
        Raw::Float(f) if f.fract() == 0.0 => Ok(f as i64),
        Raw::Float(f) => Err(E::custom(format!("{f} is not an integer"))),
        Raw::Str(s) => s
            .trim()
            .parse()
            .map_err(|_| E::custom(format!("{s:?} is not an int64"))),
    }
}

pub fn serialize<S: Serializer>(v: &i64, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&v.to_string())
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
    to_i64(Raw::deserialize(d)?)
}

pub mod option {
    use super::*;

    pub fn serialize<S: Serializer>(v: &Option<i64>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(n) => s.serialize_str(&n.to_string()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        match Option::<Raw>::deserialize(d)? {
            None => Ok(None),
            Some(r) => to_i64(r).map(Some),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize, PartialEq, Debug, Default)]
    #[serde(default)]
    struct T {
        #[serde(with = "super")]
        a: i64,
        #[serde(with = "super::option", skip_serializing_if = "Option::is_none")]
        b: Option<i64>,
    }

    #[test]
    fn strings_and_numbers() {
        let t: T = serde_json::from_str(r#"{"a":"12","b":3}"#).unwrap();
        assert_eq!(t, T { a: 12, b: Some(3) });
        assert_eq!(serde_json::to_string(&t).unwrap(), r#"{"a":"12","b":"3"}"#);
        let t: T = serde_json::from_str(r#"{}"#).unwrap();
        assert_eq!(t, T { a: 0, b: None });
        assert!(serde_json::from_str::<T>(r#"{"a":"x"}"#).is_err());
    }
}
