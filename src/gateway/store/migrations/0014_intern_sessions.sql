-- An intern's chat sessions and their transcripts, as the gateway relayed them
-- (docs/guides/sessions.md): written as each chat request ends, read by the keys that may chat
-- with the intern, also while it sleeps. In the store, so they survive hibernation, a daemon's
-- move to another host and a backup's restore with the rest of the account's data.
create table intern_sessions (
  intern_id uuid not null references interns(id) on delete cascade,
  id text not null,
  title text not null,
  -- The latest request's ending: completed, paused, failed or cancelled.
  state text not null,
  entries integer not null default 0,
  created_at timestamptz(3) not null default now(),
  updated_at timestamptz(3) not null default now(),
  primary key (intern_id, id)
);
create index intern_sessions_recent_idx on intern_sessions (intern_id, updated_at desc, id desc);

-- One entry of a transcript: `seq` counts from 1 within its session, in the order recorded.
create table intern_session_entries (
  intern_id uuid not null,
  session_id text not null,
  seq integer not null,
  at timestamptz(3) not null,
  kind text not null,
  body jsonb not null,
  primary key (intern_id, session_id, seq),
  foreign key (intern_id, session_id) references intern_sessions (intern_id, id) on delete cascade
);
