-- A flowrt data file of schema version 2 (version 1 and the holder table), as the
-- SqliteStore of that version wrote it: the wait-for-approval example's first three events (three
-- contexts waiting, no checkpoints). SqliteStoreTest.AnOlderFile_IsMigratedOnOpen_AndItsStateLoads builds a file from it.
PRAGMA application_id=1718383220;
PRAGMA foreign_keys=OFF;
BEGIN TRANSACTION;
CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;
INSERT INTO meta VALUES('schema_version',2);
CREATE TABLE counters(id INTEGER PRIMARY KEY CHECK (id = 1), commit_seq INTEGER NOT NULL,
  context_seq INTEGER NOT NULL, fencing_token INTEGER NOT NULL, sys_id_seed INTEGER NOT NULL,
  sys_id_count INTEGER NOT NULL, clock INTEGER NOT NULL);
INSERT INTO counters VALUES(1,3,3,0,0,0,1767225600000);
CREATE TABLE record_tables(name TEXT PRIMARY KEY, position INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO record_tables VALUES('purchase',1);
CREATE TABLE records(tbl TEXT NOT NULL, sys_id TEXT NOT NULL, position INTEGER NOT NULL, body TEXT NOT NULL,
  PRIMARY KEY (tbl, sys_id)) WITHOUT ROWID;
INSERT INTO records VALUES('purchase','p1',1,'{"sys_id":"p1","item":"laptop","approval":"requested","sys_created_on":"2026-01-01T00:00:00.000Z","sys_updated_on":"2026-01-01T00:00:00.000Z","sys_mod_count":0}');
INSERT INTO records VALUES('purchase','p2',2,'{"sys_id":"p2","item":"chair","approval":"requested","sys_created_on":"2026-01-01T00:00:00.000Z","sys_updated_on":"2026-01-01T00:00:00.000Z","sys_mod_count":0}');
INSERT INTO records VALUES('purchase','p3',3,'{"sys_id":"p3","item":"yacht","approval":"requested","sys_created_on":"2026-01-01T00:00:00.000Z","sys_updated_on":"2026-01-01T00:00:00.000Z","sys_mod_count":0}');
CREATE TABLE definitions(type TEXT NOT NULL, id TEXT NOT NULL, draft TEXT, published TEXT, fingerprint TEXT,
  active INTEGER NOT NULL, activated_at INTEGER NOT NULL, last_tick INTEGER NOT NULL,
  PRIMARY KEY (type, id)) WITHOUT ROWID;
INSERT INTO definitions VALUES('flow','await_approval',NULL,'{"$schema":"../../../schemas/definition.schema.json","id":"await_approval","name":"Wait up to two days for a manager''s approval","trigger":{"type":"record","table":"purchase","when":"created"},"actions":[{"id":"decision","action":"wait_for_condition","inputs":{"table":"purchase","sys_id":"{{trigger.sys_id}}","condition":{"field":"approval","op":"in","value":["approved","rejected"]},"timeout":"2d"}},{"if":{"pill":"steps.decision.timed_out","op":"eq","value":true},"then":[{"action":"update_record","inputs":{"table":"purchase","sys_id":"{{trigger.sys_id}}","values":{"approval":"expired"}}},{"action":"log","inputs":{"level":"warn","message":"{{trigger.record.item}}: no decision in two days"}}],"else":[{"action":"log","inputs":{"message":"{{trigger.record.item}}: {{steps.decision.record.approval}}"}}]}]}','48f729dc99915253',1,1767225600000,-1);
CREATE TABLE definition_versions(type TEXT NOT NULL, id TEXT NOT NULL, fingerprint TEXT NOT NULL,
  body TEXT NOT NULL, PRIMARY KEY (type, id, fingerprint)) WITHOUT ROWID;
INSERT INTO definition_versions VALUES('flow','await_approval','48f729dc99915253','{"$schema":"../../../schemas/definition.schema.json","id":"await_approval","name":"Wait up to two days for a manager''s approval","trigger":{"type":"record","table":"purchase","when":"created"},"actions":[{"id":"decision","action":"wait_for_condition","inputs":{"table":"purchase","sys_id":"{{trigger.sys_id}}","condition":{"field":"approval","op":"in","value":["approved","rejected"]},"timeout":"2d"}},{"if":{"pill":"steps.decision.timed_out","op":"eq","value":true},"then":[{"action":"update_record","inputs":{"table":"purchase","sys_id":"{{trigger.sys_id}}","values":{"approval":"expired"}}},{"action":"log","inputs":{"level":"warn","message":"{{trigger.record.item}}: no decision in two days"}}],"else":[{"action":"log","inputs":{"message":"{{trigger.record.item}}: {{steps.decision.record.approval}}"}}]}]}');
CREATE TABLE contexts(seq INTEGER PRIMARY KEY, id TEXT NOT NULL, flow TEXT NOT NULL, status TEXT NOT NULL,
  commit_seq INTEGER NOT NULL, trigger TEXT, inputs TEXT, cause TEXT, run_key TEXT,
  started INTEGER NOT NULL, ended INTEGER NOT NULL, record TEXT);
INSERT INTO contexts VALUES(1,'ctx-1','await_approval','waiting',1,'{"type":"record","time":1767225600000,"table":"purchase","operation":"insert","sys_id":"p1","record":{"sys_id":"p1","item":"laptop","approval":"requested","sys_created_on":"2026-01-01T00:00:00.000Z","sys_updated_on":"2026-01-01T00:00:00.000Z","sys_mod_count":0}}',NULL,NULL,NULL,-1,-1,'{"id":"ctx-1","seq":1,"flow":"await_approval","plan_version":"await_approval@a773d756","status":"waiting","trigger":{"type":"record","table":"purchase","operation":"insert","sys_id":"p1"},"cause":null,"chain":[],"started_at":"2026-01-01T00:00:00.000Z","ended_at":null,"runtime_ms":0.0,"steps":[{"path":"1","id":"decision","action":"wait_for_condition","status":"waiting","started_at":"2026-01-01T00:00:00.000Z","ended_at":null,"inputs":{"table":"purchase","sys_id":"p1","condition":{"field":"approval","op":"in","value":["approved","rejected"]},"timeout":"2d"},"outputs":{}}],"logs":[],"variables":{},"error":null}');
INSERT INTO contexts VALUES(2,'ctx-2','await_approval','waiting',2,'{"type":"record","time":1767225600000,"table":"purchase","operation":"insert","sys_id":"p2","record":{"sys_id":"p2","item":"chair","approval":"requested","sys_created_on":"2026-01-01T00:00:00.000Z","sys_updated_on":"2026-01-01T00:00:00.000Z","sys_mod_count":0}}',NULL,NULL,NULL,1767225600000,-1,'{"id":"ctx-2","seq":2,"flow":"await_approval","plan_version":"await_approval@a773d756","status":"waiting","trigger":{"type":"record","table":"purchase","operation":"insert","sys_id":"p2"},"cause":null,"chain":[],"started_at":"2026-01-01T00:00:00.000Z","ended_at":null,"runtime_ms":0.0,"steps":[{"path":"1","id":"decision","action":"wait_for_condition","status":"waiting","started_at":"2026-01-01T00:00:00.000Z","ended_at":null,"inputs":{"table":"purchase","sys_id":"p2","condition":{"field":"approval","op":"in","value":["approved","rejected"]},"timeout":"2d"},"outputs":{}}],"logs":[],"variables":{},"error":null}');
INSERT INTO contexts VALUES(3,'ctx-3','await_approval','waiting',3,'{"type":"record","time":1767225600000,"table":"purchase","operation":"insert","sys_id":"p3","record":{"sys_id":"p3","item":"yacht","approval":"requested","sys_created_on":"2026-01-01T00:00:00.000Z","sys_updated_on":"2026-01-01T00:00:00.000Z","sys_mod_count":0}}',NULL,NULL,NULL,1767225600000,-1,'{"id":"ctx-3","seq":3,"flow":"await_approval","plan_version":"await_approval@a773d756","status":"waiting","trigger":{"type":"record","table":"purchase","operation":"insert","sys_id":"p3"},"cause":null,"chain":[],"started_at":"2026-01-01T00:00:00.000Z","ended_at":null,"runtime_ms":0.0,"steps":[{"path":"1","id":"decision","action":"wait_for_condition","status":"waiting","started_at":"2026-01-01T00:00:00.000Z","ended_at":null,"inputs":{"table":"purchase","sys_id":"p3","condition":{"field":"approval","op":"in","value":["approved","rejected"]},"timeout":"2d"},"outputs":{}}],"logs":[],"variables":{},"error":null}');
CREATE TABLE locks(name TEXT PRIMARY KEY, state TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE run_once(tbl TEXT NOT NULL, sys_id TEXT NOT NULL, flow TEXT NOT NULL,
  PRIMARY KEY (tbl, sys_id, flow)) WITHOUT ROWID;
CREATE TABLE recoveries(id INTEGER PRIMARY KEY, at INTEGER NOT NULL, report TEXT NOT NULL);
CREATE INDEX records_by_position ON records(tbl, position);
CREATE INDEX contexts_by_status ON contexts(status, seq);
CREATE INDEX contexts_by_flow ON contexts(flow, seq);
CREATE TABLE holder(id INTEGER PRIMARY KEY CHECK (id = 1), pid INTEGER NOT NULL, host TEXT NOT NULL,
  since TEXT NOT NULL);
COMMIT;
