-- Concurrent history maintenance (publisher/jobs/history.ts run by two publishers at once, or beside
-- `make simulate`): a second caller of history_ensure_partition that waited on the per-table
-- advisory lock still read the catalogue as it was before the first caller's commit (an advisory
-- lock does not process catalogue invalidations) and failed on CREATE TABLE with "already exists".
-- The re-check now follows the table lock on the DEFAULT partition (which does), and CREATE
-- tolerates duplicate_table. history_drop_partition takes the same per-table lock and reads
-- pg_class with a fresh snapshot, so a partition dropped by a concurrent run is seen as gone.
-- (000101 and 000102 are applied as they were; these replace their functions.)

CREATE OR REPLACE FUNCTION history_ensure_partition(parent text, day date) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  part text := format('%s_p%s', parent, to_char(day, 'YYYYMMDD'));
  def text := parent || '_default';
  key text;
  lo timestamptz := day::timestamp AT TIME ZONE 'UTC';
  hi timestamptz := (day + 1)::timestamp AT TIME ZONE 'UTC';
  cols text;
BEGIN
  IF parent NOT IN ('events', 'telemetry', 'trips') THEN
    RAISE EXCEPTION 'history_ensure_partition: unknown history table %', parent USING ERRCODE = '22023';
  END IF;
  IF to_regclass(part) IS NOT NULL THEN RETURN false; END IF;
  PERFORM pg_advisory_xact_lock(hashtext('history_partition:' || parent));
  -- writers of this day wait until the partition exists: a row committed into the DEFAULT partition
  -- between the move and the attach would make the attach fail. Taking a table lock also makes this
  -- backend read the catalogue changes of a concurrent caller that held the advisory lock before us
  -- (an advisory lock alone does not), so the re-check below sees its partition.
  EXECUTE format('LOCK TABLE %I IN EXCLUSIVE MODE', def);
  IF to_regclass(part) IS NOT NULL THEN RETURN false; END IF;
  key := CASE parent WHEN 'trips' THEN 'end_time' ELSE 'ts' END;
  SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO cols
    FROM pg_attribute WHERE attrelid = parent::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = '';
  BEGIN
    EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS)', part, parent);
  EXCEPTION WHEN duplicate_table THEN
    RETURN false;  -- created by a concurrent caller after all
  END;
  PERFORM set_config('history.partition_maintenance', 'on', true);
  EXECUTE format('WITH m AS (DELETE FROM %I WHERE %I >= %L AND %I < %L RETURNING %s) INSERT INTO %I (%s) SELECT %s FROM m',
                 def, key, lo, key, hi, cols, part, cols, cols);
  PERFORM set_config('history.partition_maintenance', 'off', true);
  -- the matching CHECK spares the attach a validation scan of the new partition
  EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I CHECK (%I >= %L AND %I < %L)', part, part || '_range', key, lo, key, hi);
  EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (%L) TO (%L)', parent, part, lo, hi);
  EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', part, part || '_range');
  RETURN true;
END $$;

CREATE OR REPLACE FUNCTION history_drop_partition(parent text, day date) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  part text := format('%s_p%s', parent, to_char(day, 'YYYYMMDD'));
BEGIN
  IF parent NOT IN ('events', 'telemetry', 'trips') THEN
    RAISE EXCEPTION 'history_drop_partition: unknown history table %', parent USING ERRCODE = '22023';
  END IF;
  -- one creator or dropper per table at a time (the lock of history_ensure_partition); the catalogue
  -- is then read with a fresh snapshot, so a partition dropped by a concurrent run is seen as gone
  PERFORM pg_advisory_xact_lock(hashtext('history_partition:' || parent));
  IF NOT EXISTS (SELECT 1 FROM pg_class WHERE relname = part AND relnamespace = 'public'::regnamespace) THEN RETURN false; END IF;
  EXECUTE format('LOCK TABLE %I IN ACCESS EXCLUSIVE MODE', part);
  IF history_unpublished_hours(parent, day) > 0 THEN RETURN false; END IF;
  EXECUTE format('ALTER TABLE %I DETACH PARTITION %I', parent, part);
  EXECUTE format('DROP TABLE %I', part);
  INSERT INTO history_retention AS r (source, dropped_before, dropped_partitions, dropped_at)
  VALUES (parent, (day + 1)::timestamp AT TIME ZONE 'UTC', 1, now())
  ON CONFLICT (source) DO UPDATE
     SET dropped_before = greatest(r.dropped_before, excluded.dropped_before),
         dropped_partitions = r.dropped_partitions + 1, dropped_at = excluded.dropped_at;
  RETURN true;
END $$;
