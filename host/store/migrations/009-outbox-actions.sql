-- Buttons a piece offers where the platform has them (Telegram's inline keyboard on approval requests), as a
-- JSON array of {label, command}. A press comes back as the command from the presser, so the host's one
-- owner check decides; a channel without buttons ignores them and the text commands work everywhere.
ALTER TABLE outbox ADD COLUMN actions TEXT;
