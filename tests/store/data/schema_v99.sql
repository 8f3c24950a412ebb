-- A flowrt data file from a future flowrt (schema version 99, a layout this build does not
-- know). SqliteStoreTest.ANewerFile_IsRefusedUnchanged builds a file from it: opening it
-- must fail with a message saying so, and leave the file as it was.
PRAGMA application_id=1718383220;
BEGIN TRANSACTION;
CREATE TABLE meta(key TEXT PRIMARY KEY, value) WITHOUT ROWID;
INSERT INTO meta VALUES('schema_version',99);
CREATE TABLE state_v99(key TEXT PRIMARY KEY, value BLOB) WITHOUT ROWID;
INSERT INTO state_v99 VALUES('records', x'00010203');
COMMIT;
