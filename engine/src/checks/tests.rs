use super::*;

fn history(jsonl: &str) -> store::History {
    let read = store::format::read_str(jsonl, store::format::Format::JsonLines).unwrap();
    store::History::new(read.ops).unwrap()
}

#[test]
fn every_workload_is_handled_by_exactly_one_check() {
    for w in WorkloadKind::every() {
        let handlers: Vec<&str> = CHECKS
            .iter()
            .filter(|c| c.handles(w))
            .map(|c| c.name())
            .collect();
        assert_eq!(handlers.len(), 1, "{w}: handled by {handlers:?}");
        // Its name parses back to it, and the header says what decides it.
        assert_eq!(WorkloadKind::parse(w.name()), Ok(w));
        let said = describe(w, &CheckHow::new(Some(w)));
        assert!(!said.contains("no check"), "{w}: {said}");
    }
    // The names of the table's entries are distinct.
    let mut names: Vec<&str> = CHECKS.iter().map(|c| c.name()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), CHECKS.len());
}

#[test]
fn register_is_the_linearizable_register_everywhere() {
    let w = WorkloadKind::parse("register").unwrap();
    assert_eq!(entry_for(w).unwrap().name(), "linearizability");
    assert_eq!(WorkloadKind::parse(":cas-register"), Ok(w));
    assert_eq!(
        entry_for(WorkloadKind::parse("wr").unwrap())
            .unwrap()
            .name(),
        "elle"
    );
    let err = WorkloadKind::parse("regster").unwrap_err().to_string();
    for n in workloads::WORKLOADS {
        assert!(err.contains(n.name), "{err} lacks {}", n.name);
    }
}

#[test]
fn a_run_without_commits_is_unknown_in_every_result_file() {
    let failed = history(concat!(
        "{\"type\":\"invoke\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]]}\n",
        "{\"type\":\"fail\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]]}\n",
    ));
    let committed = history(concat!(
        "{\"type\":\"invoke\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]]}\n",
        "{\"type\":\"ok\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]]}\n",
        "{\"type\":\"invoke\",\"process\":0,\"f\":\"txn\",\"value\":[[\"r\",1,null]]}\n",
        "{\"type\":\"ok\",\"process\":0,\"f\":\"txn\",\"value\":[[\"r\",1,[1]]]}\n",
    ));
    let how = CheckHow {
        from_run: true,
        ..CheckHow::new(Some(WorkloadKind::ListAppend))
    };
    let v = check(&committed, &how).unwrap();
    assert_eq!(v.valid, Valid::True);
    assert_eq!(v.json["valid?"], true);
    assert!(v.json.get("reason").is_none());
    assert_eq!(v.json["checker"], "elle");
    let v = check(&failed, &how).unwrap();
    assert_eq!(v.valid, Valid::Unknown);
    assert_eq!(v.json["valid?"], "unknown");
    assert_eq!(v.json["reason"], "no transaction committed");
    let edn = v.elle.as_ref().unwrap().result.to_edn();
    assert!(edn.contains(":valid? :unknown"), "{edn}");
    assert!(
        verdict_line(&v).starts_with("unknown: list-append checked as strong-serializable"),
        "{}",
        verdict_line(&v)
    );
}

#[test]
fn a_register_run_without_an_ok_op_is_unknown_and_a_file_without_client_ops_valid() {
    let failed = history(concat!(
        "{\"type\":\"invoke\",\"process\":0,\"f\":\"write\",\"value\":1}\n",
        "{\"type\":\"fail\",\"process\":0,\"f\":\"write\",\"value\":1}\n",
    ));
    let run = CheckHow {
        from_run: true,
        ..CheckHow::new(Some(WorkloadKind::Register))
    };
    let v = check(&failed, &run).unwrap();
    assert_eq!(v.valid, Valid::Unknown);
    assert_eq!(v.json["reason"], "no op completed ok");
    let nemesis = history(concat!(
        "{\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"start\",\"value\":null}\n",
        "{\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"stop\",\"value\":null}\n",
    ));
    let v = check(&nemesis, &CheckHow::new(None)).unwrap();
    assert_eq!(v.valid, Valid::True);
    assert!(!v.warnings.is_empty());
}

#[test]
fn every_family_answers_with_the_same_keys() {
    let histories = [
        concat!(
            "{\"type\":\"invoke\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]]}\n",
            "{\"type\":\"ok\",\"process\":0,\"f\":\"txn\",\"value\":[[\"append\",1,1]]}\n",
            "{\"type\":\"invoke\",\"process\":0,\"f\":\"txn\",\"value\":[[\"r\",1,null]]}\n",
            "{\"type\":\"ok\",\"process\":0,\"f\":\"txn\",\"value\":[[\"r\",1,[1]]]}\n",
        ),
        concat!(
            "{\"type\":\"invoke\",\"process\":0,\"f\":\"write\",\"value\":1}\n",
            "{\"type\":\"ok\",\"process\":0,\"f\":\"write\",\"value\":1}\n",
            "{\"type\":\"invoke\",\"process\":0,\"f\":\"read\",\"value\":null}\n",
            "{\"type\":\"ok\",\"process\":0,\"f\":\"read\",\"value\":2}\n",
        ),
        concat!(
            "{\"type\":\"invoke\",\"process\":0,\"f\":\"add\",\"value\":1}\n",
            "{\"type\":\"ok\",\"process\":0,\"f\":\"add\",\"value\":1}\n",
            "{\"type\":\"invoke\",\"process\":0,\"f\":\"read\",\"value\":null}\n",
            "{\"type\":\"ok\",\"process\":0,\"f\":\"read\",\"value\":1}\n",
        ),
    ];
    let mut checkers = Vec::new();
    for h in histories {
        let v = check(&history(h), &CheckHow::new(None)).unwrap();
        for key in ["valid?", "workload", "checker", "checks"] {
            assert!(v.json.get(key).is_some(), "{key} missing: {}", v.json);
        }
        checkers.push((v.checker, v.valid));
    }
    assert_eq!(
        checkers,
        [
            ("elle", Valid::True),
            ("linearizability", Valid::False),
            ("jepsen", Valid::True)
        ]
    );
}
