-- Operating at breadth with the ops CLI (docs/operations.md, "At breadth").
--
-- A zone's first operating hour is zones.created_at, and it needs no column of its own: the
-- publisher publishes a zone's hourly files from that hour on and catches up the hours before its
-- look-back from it (PubMissingHours, PubCatchupScan), the feed routes answer 404 for an hour before
-- it, and the monthly reports start at its month. `ops zone import` sets it from a zone file's
-- `operating_since` (ops/admin/zones.ts), so a zone imported with its history gets that history
-- published; the comment records the meaning for whoever reads the schema.
COMMENT ON COLUMN zones.created_at IS
  'first operating hour of the zone: its hourly feed files are published from this hour on (ops zone import: operating_since)';

-- What a database has been made into, by the one tool that makes it so. 'demo': the demo seed
-- (lib/seed) wrote its zones, partners and the demo credentials the README prints; the seed runs
-- only on an empty database or one holding this mark, and `ops simulate` seeds only there, so known
-- keys and secrets never reach a database that holds real partners.
CREATE TABLE database_marks (
  mark    text PRIMARY KEY CHECK (mark IN ('demo')),
  set_at  timestamptz NOT NULL DEFAULT now()
);

-- a demo seeded before this mark existed: it holds the demo partner's own key (label 'demo')
INSERT INTO database_marks (mark)
SELECT 'demo'
 WHERE EXISTS (SELECT 1 FROM api_keys k JOIN partners p ON p.id = k.partner_id
                WHERE p.name = 'Demo Partner App' AND k.label = 'demo');
