//! What a webhook delivery sends: kineticd's JSON event or a Slack incoming-webhook
//! message, built from the audit event the delivery copied when it was written.
//!
//! Invariant: the body depends only on the delivery (its id, event name and copied
//! audit event), so every try of one delivery sends the same bytes apart from nothing
//! (the signature's timestamp is in a header); `id` is the delivery's id, what a
//! receiver de-duplicates on.

use serde_json::{Value, json};
use uuid::Uuid;

use crate::domain::webhooks::WebhookFormat;

/// The body of delivery `id` of `event` (a WebhookEvent name) for the copied audit
/// event `payload` (`{time, team, target, actor, auditType, details}`).
pub fn body(format: WebhookFormat, id: Uuid, event: &str, payload: &Value) -> Value {
    let time = payload["time"]
        .as_str()
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| crate::model::timestamp(t.with_timezone(&chrono::Utc)))
        .unwrap_or_default();
    match format {
        WebhookFormat::Json => json!({
            "id": id.to_string(),
            "type": event,
            "time": time,
            "team": payload["team"],
            "target": payload["target"],
            "actor": payload["actor"],
            "details": payload["details"],
        }),
        WebhookFormat::Slack => slack(id, event, &time, payload),
    }
}

/// Slack's incoming-webhook body: `text` (the notification's fallback) and `blocks` (a
/// section with the summary, a context line with team, actor, time and delivery id).
fn slack(id: Uuid, event: &str, time: &str, p: &Value) -> Value {
    let summary = summary(event, p);
    let s = |k: &str| p[k].as_str().unwrap_or("").to_owned();
    let context = format!(
        "team *{}* · by {} · {} · delivery {}",
        escape(&s("team")),
        escape(&s("actor")),
        escape(time),
        id
    );
    json!({
        "text": summary,
        "blocks": [
            {"type": "section", "text": {"type": "mrkdwn", "text": format!("*{}*\n{}", event, escape(&summary))}},
            {"type": "context", "elements": [{"type": "mrkdwn", "text": context}]},
        ],
    })
}

/// One line saying what happened.
fn summary(event: &str, p: &Value) -> String {
    let d = &p["details"];
    let s = |v: &Value| v.as_str().unwrap_or("?").to_owned();
    let op = format!(
        "{} on {}",
        s(&d["operationType"]),
        d["operationTarget"]
            .as_str()
            .unwrap_or_else(|| p["target"].as_str().unwrap_or("?"))
    );
    let text = match (event, p["auditType"].as_str().unwrap_or("")) {
        ("OPERATION_FINISHED", _) => {
            let mut t = format!("{op} ended {}", s(&d["to"]));
            if let Some(r) = d["reason"].as_str() {
                t.push_str(&format!(" ({r})"));
            }
            t
        }
        ("APPROVAL_NEEDED", _) => format!("{op} waits for an ADMIN's approval"),
        ("APPROVAL_DECIDED", "OPERATION_APPROVED") => {
            format!("{} was approved by {}", s(&p["target"]), s(&p["actor"]))
        }
        ("APPROVAL_DECIDED", "OPERATION_REJECTED") => {
            format!("{} was rejected by {}", s(&p["target"]), s(&p["actor"]))
        }
        ("APPROVAL_DECIDED", _) => format!("{op} expired waiting for approval"),
        (other, _) => format!("{other} on {}", s(&p["target"])),
    };
    format!("{} ({})", text, s(&p["target"]))
}

/// Slack's mrkdwn control characters escaped (`&`, `<`, `>`).
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_slack_bodies() {
        let id = Uuid::nil();
        let p = json!({"time": "2026-12-07T02:30:00.5+00:00", "team": "acme", "target": "operations/x",
            "actor": "kineticd", "auditType": "OPERATION_STATE_CHANGED",
            "details": {"from": "RUNNING", "to": "FAILED", "reason": "QUOTA", "operationType": "APPLY",
                        "operationTarget": "projects/p/zones/z/clusters/<c>"}});
        let b = body(WebhookFormat::Json, id, "OPERATION_FINISHED", &p);
        assert_eq!(b["type"], "OPERATION_FINISHED");
        assert_eq!(b["team"], "acme");
        assert_eq!(b["details"]["to"], "FAILED");
        assert!(
            b["time"]
                .as_str()
                .unwrap()
                .starts_with("2026-12-07T02:30:00")
        );
        let s = body(WebhookFormat::Slack, id, "OPERATION_FINISHED", &p);
        assert!(
            s["text"].as_str().unwrap().contains("ended FAILED (QUOTA)"),
            "{s}"
        );
        assert_eq!(s["blocks"][0]["type"], "section");
        assert!(
            s["blocks"][0]["text"]["text"]
                .as_str()
                .unwrap()
                .contains("&lt;c&gt;")
        );
        assert_eq!(s["blocks"][1]["elements"][0]["type"], "mrkdwn");
    }
}
