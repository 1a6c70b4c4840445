CREATE TABLE "app_smtp" (
	"app_id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"host" text NOT NULL,
	"port" integer NOT NULL,
	"tls_mode" text NOT NULL,
	"username" text,
	"password_sealed" text,
	"from_address" text NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "mail_outbox" (
	"feedback_id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"app_id" text NOT NULL,
	"email_sealed" text,
	"email_hash" text NOT NULL,
	"email_masked" text NOT NULL,
	"state" text NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" bigint NOT NULL,
	"lease_until" bigint,
	"last_error" text,
	"created_at" bigint NOT NULL,
	"settled_at" bigint
);
--> statement-breakpoint
CREATE TABLE "mail_unsubscribes" (
	"app_id" text NOT NULL,
	"email_hash" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "mail_unsubscribes_app_id_email_hash_pk" PRIMARY KEY("app_id","email_hash")
);
--> statement-breakpoint
ALTER TABLE "feedback" ADD COLUMN "notify_email_sealed" text;--> statement-breakpoint
CREATE INDEX "mail_outbox_due_idx" ON "mail_outbox" USING btree ("next_attempt_at") WHERE state = 'pending';--> statement-breakpoint
CREATE INDEX "mail_outbox_app_idx" ON "mail_outbox" USING btree ("app_id","feedback_id");--> statement-breakpoint
CREATE INDEX "feedback_private_sub_idx" ON "feedback" USING btree ("app_id","external_user_id","id") WHERE submitted_mode = 'private';--> statement-breakpoint
CREATE INDEX "feedback_notify_due_idx" ON "feedback" USING btree ("id") WHERE notify_email_sealed IS NOT NULL AND status = 'resolved';