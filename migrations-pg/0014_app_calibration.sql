CREATE TABLE "app_calibration" (
	"app_id" text PRIMARY KEY NOT NULL,
	"scored" integer NOT NULL,
	"median" double precision NOT NULL,
	"updated_at" bigint NOT NULL
);
