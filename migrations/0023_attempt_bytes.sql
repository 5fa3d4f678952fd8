-- What a destination answered, kept as it came (docs/destinations.md, "Attempts"): the first
-- bytes of its body as bytes, whatever they are (a NUL, UTF-16, invalid UTF-8 once broke the
-- whole batch of records when they went into a text column), and its headers as escaped text.
-- `response_head` keeps the readable rendering of those bytes (decoded, escaped, bounded).
ALTER TABLE hookgate.destination_attempts
  ADD COLUMN IF NOT EXISTS response_bytes   bytea,
  ADD COLUMN IF NOT EXISTS response_headers text,
  -- The attempt's result was never recorded: its lease ran out first (its worker died, or its
  -- record could not be written). Written by the claim that takes the delivery up again; a late
  -- record of the same attempt replaces it.
  ADD COLUMN IF NOT EXISTS unrecorded       boolean NOT NULL DEFAULT false;
