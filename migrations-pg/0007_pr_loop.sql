CREATE TABLE "git_host_deliveries" (
	"app_id" text NOT NULL,
	"delivery_id" text NOT NULL,
	"received_at" bigint NOT NULL,
	CONSTRAINT "git_host_deliveries_app_id_delivery_id_pk" PRIMARY KEY("app_id","delivery_id")
);
--> statement-breakpoint
ALTER TABLE "agent_runs" ADD COLUMN "trigger" text DEFAULT 'report' NOT NULL;--> statement-breakpoint
ALTER TABLE "agent_runs" ADD COLUMN "review_text" text;--> statement-breakpoint
ALTER TABLE "repo_connections" ADD COLUMN "webhook_secret_enc" text;--> statement-breakpoint
CREATE INDEX "git_host_deliveries_received_idx" ON "git_host_deliveries" USING btree ("received_at");