CREATE TABLE "cluster_nodes" (
	"id" text PRIMARY KEY NOT NULL,
	"host" text NOT NULL,
	"pid" integer NOT NULL,
	"version" text NOT NULL,
	"started_at" bigint NOT NULL,
	"heartbeat_at" bigint NOT NULL,
	"roles" text DEFAULT '' NOT NULL
);
--> statement-breakpoint
CREATE TABLE "leases" (
	"name" text PRIMARY KEY NOT NULL,
	"holder" text NOT NULL,
	"token" bigint NOT NULL,
	"expires_at" bigint NOT NULL,
	"acquired_at" bigint NOT NULL
);

--> statement-breakpoint
ALTER TABLE "agent_runs" ADD COLUMN "node_id" text;