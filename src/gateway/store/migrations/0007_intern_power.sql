-- Hibernation (docs/fleet.md): whether a running intern's daemon is up. `status` stays `running`
-- while it sleeps, so clients see no difference; `power_at` dates the last transition, so a
-- gateway that died half-way through one is taken over once it is stale.
alter table interns add column power text not null default 'awake';
alter table interns add column power_at timestamptz;
create index interns_awake_idx on interns (power) where status = 'running';
