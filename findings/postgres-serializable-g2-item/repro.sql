-- run: pg-ser-21 20261123T205942.967
-- repro.sql: the transactions of every dependency cycle harness reported, as SQL to replay by hand.
-- database: postgres (PostgreSQL dialect, tables txn0..txn2)
-- isolation: serializable (SERIALIZABLE)
-- How to use, one cycle at a time, against a scratch database:
--   1. run the cycle's setup block (it creates missing tables txnN and resets the rows of the cycle's keys);
--   2. open one psql session per "-- session P<process>" block;
--   3. run the statements in the numbered order /* 1 */, /* 2 */, … switching sessions as the numbers say.
-- Each read is followed by what the database returned in the recorded history (-- observed: …).
-- The numbering is one statement order in which the observed dependencies can hold, following the
-- history (invocation index for BEGIN and statements, completion index for COMMIT) where they allow.
-- Transactions outside the cycle are not replayed: where they wrote in between, a replayed read can
-- differ from the observed one (the setup gives each key the state the cycle's reads imply).

-- ==== G2-item #1 ====
-- Let:
--   T1 = {:index 5627, :type :ok, :process 4, :value [[:r 115 []] [:r 115 []] [:append 116 1]]}
--   T2 = {:index 5629, :type :ok, :process 5, :value [[:append 112 25] [:r 115 []] [:append 115 2]]}
--   T3 = {:index 5640, :type :ok, :process 2, :value [[:append 108 25] [:r 116 []] [:r 112 [1 3 4 10 14 16 22 25]]]}
--
-- Then:
--   - T1 < T2, because T1 observed the initial (nil) state of 115, which T2 created by appending 2.
--   - T2 < T3, because T3 observed T2's append of 25 to key 112.
--   - However, T3 < T1, because T3 observed the initial (nil) state of 116, which T1 created by appending 1: a contradiction!

-- setup (in any session, before step 1):
CREATE TABLE IF NOT EXISTS txn0 (id BIGINT NOT NULL PRIMARY KEY, val TEXT);
CREATE TABLE IF NOT EXISTS txn1 (id BIGINT NOT NULL PRIMARY KEY, val TEXT);
-- key 108: not read by these transactions; starts empty
DELETE FROM txn0 WHERE id = 108;
-- key 112: [1 3 4 10 14 16 22], the longest prefix read that holds none of these transactions' appends
DELETE FROM txn1 WHERE id = 112;
INSERT INTO txn1 (id, val) VALUES (112, '1,3,4,10,14,16,22');
-- key 115: read as empty; starts empty
DELETE FROM txn1 WHERE id = 115;
-- key 116: read as empty; starts empty
DELETE FROM txn0 WHERE id = 116;
-- step order: 1-4 P4, 5-8 P5, 9 P2, 10 P5, 11-13 P2, 14 P4, 15 P2

-- session P4
-- T1 = op 5627: invoked at index 5607, completed :ok at index 5627
/* 1 */ BEGIN ISOLATION LEVEL SERIALIZABLE;
/* 2 */ SELECT val FROM txn1 WHERE id = 115;  -- observed: []
/* 3 */ SELECT val FROM txn1 WHERE id = 115;  -- observed: []
/* 4 */ INSERT INTO txn0 AS t (id, val) VALUES (116, '1') ON CONFLICT (id) DO UPDATE SET val = CONCAT(t.val, ',', '1');
/* 14 */ COMMIT;

-- session P5
-- T2 = op 5629: invoked at index 5608, completed :ok at index 5629
/* 5 */ BEGIN ISOLATION LEVEL SERIALIZABLE;
/* 6 */ INSERT INTO txn1 AS t (id, val) VALUES (112, '25') ON CONFLICT (id) DO UPDATE SET val = CONCAT(t.val, ',', '25');
/* 7 */ SELECT val FROM txn1 WHERE id = 115;  -- observed: []
/* 8 */ INSERT INTO txn1 AS t (id, val) VALUES (115, '2') ON CONFLICT (id) DO UPDATE SET val = CONCAT(t.val, ',', '2');
/* 10 */ COMMIT;

-- session P2
-- T3 = op 5640: invoked at index 5618, completed :ok at index 5640
/* 9 */ BEGIN ISOLATION LEVEL SERIALIZABLE;
/* 11 */ INSERT INTO txn0 AS t (id, val) VALUES (108, '25') ON CONFLICT (id) DO UPDATE SET val = CONCAT(t.val, ',', '25');
/* 12 */ SELECT val FROM txn0 WHERE id = 116;  -- observed: []
/* 13 */ SELECT val FROM txn1 WHERE id = 112;  -- observed: [1 3 4 10 14 16 22 25]
/* 15 */ COMMIT;
