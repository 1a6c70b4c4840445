-- Written by hand (drizzle-kit models no triggers): the PostgreSQL side of SQLite's 0013_intake triggers.
-- One number that rises with every write to apps or api_keys, from any connection or node, so a credential
-- cache can tell with one primary-key read whether a key was revoked, an App deleted or a secret rotated.
-- Statement-level triggers: a bulk UPDATE bumps it once, which is all a cache needs to know.
INSERT INTO "credential_generation" ("id", "generation") VALUES (1, 0);--> statement-breakpoint
CREATE FUNCTION "fixloop_bump_credential_generation"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE "credential_generation" SET "generation" = "generation" + 1 WHERE "id" = 1;
  RETURN NULL;
END;
$$;--> statement-breakpoint
CREATE TRIGGER "credential_generation_apps" AFTER INSERT OR UPDATE OR DELETE ON "apps"
  FOR EACH STATEMENT EXECUTE FUNCTION "fixloop_bump_credential_generation"();--> statement-breakpoint
CREATE TRIGGER "credential_generation_api_keys" AFTER INSERT OR UPDATE OR DELETE ON "api_keys"
  FOR EACH STATEMENT EXECUTE FUNCTION "fixloop_bump_credential_generation"();
