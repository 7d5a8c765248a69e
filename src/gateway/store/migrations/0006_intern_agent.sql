-- Which agent of the operator's catalogue an intern runs (src/agents/catalogue.ts).
alter table interns add column agent text not null default 'cohort';
