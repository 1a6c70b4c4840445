CREATE TABLE "tracker_connections" (
	"app_id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"kind" text NOT NULL,
	"api_url" text NOT NULL,
	"project" text NOT NULL,
	"account" text,
	"token_sealed" text NOT NULL,
	"webhook_secret_sealed" text NOT NULL,
	"actor" text,
	"state_map" text DEFAULT '{}' NOT NULL,
	"rules" text DEFAULT '{"minDuplicates":null,"onAwaitingManual":[]}' NOT NULL,
	"event_cursor" bigint DEFAULT 0 NOT NULL,
	"last_error" text,
	"last_error_at" bigint,
	"retry_at" bigint,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tracker_issues" (
	"feedback_id" text PRIMARY KEY NOT NULL,
	"org_id" text NOT NULL,
	"app_id" text NOT NULL,
	"kind" text NOT NULL,
	"issue_id" text,
	"issue_key" text,
	"issue_url" text,
	"state_name" text,
	"state_category" text,
	"pushed_size" integer DEFAULT 0 NOT NULL,
	"commented_at" bigint,
	"sync_state" text NOT NULL,
	"last_error" text,
	"attempts" integer DEFAULT 0 NOT NULL,
	"retry_at" bigint,
	"synced_at" bigint,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "tracker_issues_issue_uq" ON "tracker_issues" USING btree ("app_id","kind","issue_id");--> statement-breakpoint
CREATE INDEX "tracker_issues_app_state_idx" ON "tracker_issues" USING btree ("app_id","sync_state");