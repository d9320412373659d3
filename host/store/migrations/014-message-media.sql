-- The file a message carried (voice note, photo, document): where it is stored in the group's folder, or why
-- it is not (router/media/media-ingest.ts). JSON; NULL for text messages.
ALTER TABLE messages ADD COLUMN media TEXT;
