-- Work on an intern that a gateway holds (docs/failure-modes.md): its provision or its deletion.
-- The gateway doing it names itself in `lease_owner` and renews `lease_until` (by the database's
-- clock) while it works; once the lease has lapsed, that gateway has died and any other takes the
-- work over.
alter table interns add column lease_owner text;
alter table interns add column lease_until timestamptz;
create index interns_leased_idx on interns (lease_until) where status in ('provisioning', 'destroying');
