-- An intern's own API key is scoped to the intern: it dies with the key that created the intern.
-- Interns created before this column exist have no creator key on record and keep their key.
alter table interns add column creator_key_id uuid;
