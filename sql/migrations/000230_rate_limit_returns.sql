-- Rate-limit positions a process claimed and did not spend can be handed back (api/kit/ratelimit.ts):
-- a process that stops getting a key's requests (its clients moved to another process) no longer
-- keeps up to a slice of the key's minute, which made another process answer 429 before the key
-- had spent its limit. For the returned positions to be claimable, a claim never counts past the
-- limit: rate_limit_claim grants what is left of the slice up to the limit, or nothing, and says
-- which positions it granted (the counter before and after).
CREATE FUNCTION rate_limit_claim(p_key text, p_window timestamptz, p_slice integer, p_limit integer,
                                 OUT claimed_from integer, OUT claimed_to integer)
LANGUAGE plpgsql AS $$
BEGIN
  -- the row lock serialises the claims and returns of one key across every API process
  SELECT count INTO claimed_from FROM rate_limit_counters WHERE key_id = p_key AND window_start = p_window FOR UPDATE;
  IF NOT FOUND THEN
    INSERT INTO rate_limit_counters (key_id, window_start, count)
    VALUES (p_key, p_window, LEAST(p_slice, p_limit))
    ON CONFLICT (key_id, window_start) DO NOTHING;
    IF FOUND THEN
      claimed_from := 0;
      claimed_to := LEAST(p_slice, p_limit);
      RETURN;
    END IF;
    -- another process's first claim of the window came first
    SELECT count INTO claimed_from FROM rate_limit_counters WHERE key_id = p_key AND window_start = p_window FOR UPDATE;
  END IF;
  claimed_to := GREATEST(claimed_from, LEAST(claimed_from + p_slice, p_limit));
  IF claimed_to > claimed_from THEN
    UPDATE rate_limit_counters SET count = claimed_to WHERE key_id = p_key AND window_start = p_window;
  END IF;
END $$;
