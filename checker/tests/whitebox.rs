//! White-box version orders: a register write skew that Elle's
//! black-box inference cannot order is `G2-item` once the transactions
//! carry PostgreSQL's txid and snapshot (`--version-order db`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use checker::{AnomalyType, CheckOptions, ConsistencyModel, Valid, Workload, check};
use store::{Format, History, read_str};

/// T1 writes x and y; T2 and T3 both see T1 only, T2 overwrites x, T3 y;
/// a final read sees both.
const WRITE_SKEW: &str = r#"
{:index 0 :type :invoke :process 0 :f :txn :value [[:w 1 1] [:w 2 1]]}
{:index 1 :type :ok :process 0 :f :txn :value [[:w 1 1] [:w 2 1]] :txid 10 :snapshot "10:10:"}
{:index 2 :type :invoke :process 1 :f :txn :value [[:r 1 nil] [:r 2 nil] [:w 1 2]]}
{:index 3 :type :invoke :process 2 :f :txn :value [[:r 1 nil] [:r 2 nil] [:w 2 2]]}
{:index 4 :type :ok :process 1 :f :txn :value [[:r 1 1] [:r 2 1] [:w 1 2]] :txid 11 :snapshot "11:11:"}
{:index 5 :type :ok :process 2 :f :txn :value [[:r 1 1] [:r 2 1] [:w 2 2]] :txid 12 :snapshot "11:11:"}
{:index 6 :type :invoke :process 3 :f :txn :value [[:r 1 nil] [:r 2 nil]]}
{:index 7 :type :ok :process 3 :f :txn :value [[:r 1 2] [:r 2 2]] :txid 13 :snapshot "13:13:"}
"#;

fn history(text: &str) -> History {
    History::new(read_str(text, Format::Edn).unwrap().ops).unwrap()
}

fn inference_only(h: &History) -> checker::CheckResult {
    let mut o = CheckOptions::new(Workload::RwRegister);
    o.models = vec![ConsistencyModel::Serializable];
    o.complete = false;
    check(h, &o)
}

#[test]
fn database_version_order_finds_write_skew() {
    let h = history(WRITE_SKEW);
    let r = inference_only(&h);
    assert_eq!(r.valid, Valid::False, "{r:?}");
    assert!(r.anomalies.contains_key(&AnomalyType::G2Item), "{r:?}");
}

#[test]
fn black_box_inference_misses_it() {
    let stripped: String = WRITE_SKEW
        .lines()
        .map(|l| match l.find(" :txid") {
            Some(i) => format!("{}}}", &l[..i]),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    let r = inference_only(&history(&stripped));
    assert_ne!(r.valid, Valid::False, "{r:?}");
    assert!(!r.anomalies.contains_key(&AnomalyType::G2Item));
}

#[test]
fn certificates_survive_json_round_trip() {
    let h = history(WRITE_SKEW);
    let mut buf = Vec::new();
    store::format::write_ops(&mut buf, h.iter_ops(), Format::JsonLines).unwrap();
    let text = String::from_utf8(buf).unwrap();
    assert!(
        text.contains(r#""txid":11"#) && text.contains(r#""snapshot":"11:11:""#),
        "{text}"
    );
    let back = History::new(read_str(&text, Format::JsonLines).unwrap().ops).unwrap();
    assert_eq!(inference_only(&back).valid, Valid::False);
}
