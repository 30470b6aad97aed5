//! Team roles and what each allows. Roles are totally ordered: every permission of a
//! lower role is also a permission of every higher one.

use serde::{Deserialize, Serialize};

#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Role {
    Viewer,
    Member,
    Admin,
    Owner,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "VIEWER",
            Role::Member => "MEMBER",
            Role::Admin => "ADMIN",
            Role::Owner => "OWNER",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "VIEWER" => Some(Role::Viewer),
            "MEMBER" => Some(Role::Member),
            "ADMIN" => Some(Role::Admin),
            "OWNER" => Some(Role::Owner),
            _ => None,
        }
    }

    /// Read the team and its resources.
    pub fn can_read(self) -> bool {
        self >= Role::Viewer
    }

    /// Run up, down, pool add/remove and drills.
    pub fn can_operate(self) -> bool {
        self >= Role::Member
    }

    /// Manage members and the team's projects.
    pub fn can_administer(self) -> bool {
        self >= Role::Admin
    }

    /// Delete the team and grant OWNER.
    pub fn is_owner(self) -> bool {
        self == Role::Owner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordering_matches_permissions() {
        assert!(Role::Viewer.can_read() && !Role::Viewer.can_operate());
        assert!(Role::Member.can_operate() && !Role::Member.can_administer());
        assert!(Role::Admin.can_administer() && !Role::Admin.is_owner());
        assert!(Role::Owner.is_owner());
        for r in [Role::Viewer, Role::Member, Role::Admin, Role::Owner] {
            assert_eq!(Role::parse(r.as_str()), Some(r));
        }
        assert_eq!(Role::parse("viewer"), None);
    }
}
