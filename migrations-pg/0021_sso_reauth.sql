ALTER TABLE "admin_sessions" ADD COLUMN "reauth_purpose" text;--> statement-breakpoint
ALTER TABLE "admin_sessions" ADD COLUMN "reauth_at" bigint;