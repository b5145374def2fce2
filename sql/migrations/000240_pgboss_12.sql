-- pg-boss 12 (publisher/work.ts) cannot migrate the schema pg-boss 10 left (version 24): its oldest
-- migration starts at 25, and pg-boss 11 shipped none from 10 (upstream's way is a new schema for the
-- new major). Every job of the platform is derived from the database again by the publishers' clocks
-- (the hours due, the GBFS ticks, the sweeps), except a republish an operator asked for: those still
-- waiting are kept in pgboss_carryover, and the old schema is dropped. The first pg-boss 12 to start
-- installs its own, and ensureQueues (lib/publication/queue.ts) sends the kept jobs again. The
-- processes of the old release must be stopped first: their pg-boss would find its schema gone.
CREATE TABLE pgboss_carryover (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  queue text NOT NULL,
  data jsonb NOT NULL,
  carried_at timestamptz NOT NULL DEFAULT now()
);

DO $$
DECLARE
  installed int;
BEGIN
  -- dynamic SQL: on a database pg-boss never ran on there is no pgboss schema to name
  IF to_regclass('pgboss.version') IS NULL THEN
    RETURN;
  END IF;
  EXECUTE 'SELECT max(version) FROM pgboss.version' INTO installed;
  IF installed < 25 THEN
    EXECUTE $sql$
      INSERT INTO pgboss_carryover (queue, data)
      SELECT name, data FROM pgboss.job
       WHERE name = 'feeds-publish-hour' AND state IN ('created', 'retry') AND (data ->> 'force')::boolean IS TRUE
       ORDER BY created_on
    $sql$;
    DROP SCHEMA pgboss CASCADE;
  END IF;
END
$$;
