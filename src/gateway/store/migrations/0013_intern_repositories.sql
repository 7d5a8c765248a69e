-- Repositories an intern was given (docs/guides/repositories.md): where the gateway cloned each
-- from, which branch and commit the intern's work starts from (what its diff is against and its
-- push builds on), and the folder of its work folder it went to. The intern's own repository is
-- the tenant's; these rows are the gateway's record of it.
create table intern_repositories (
  id uuid primary key,
  intern_id uuid not null references interns(id) on delete cascade,
  url text not null,
  ref text not null,
  path text not null,
  base_commit text not null,
  created_at timestamptz not null default now(),
  unique (intern_id, path)
);
