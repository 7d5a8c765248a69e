-- An intern's created_at is the first half of GET /interns' cursor, which a JSON timestamp carries
-- to the millisecond: stored with microseconds, a row created later within the same millisecond as
-- a page's last row (but ordered after it) matched neither half of the next page's condition and was
-- never listed. Stored to the millisecond, the cursor is exact and ties are broken by id.
alter table interns alter column created_at type timestamptz(3);
