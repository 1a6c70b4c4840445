CREATE INDEX "feedback_suggested_idx" ON "feedback" USING btree ("suggested_lead_id") WHERE suggested_lead_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX "triage_decisions_feedback_idx" ON "triage_decisions" USING btree ("feedback_id");--> statement-breakpoint
CREATE INDEX "triage_decisions_lead_idx" ON "triage_decisions" USING btree ("lead_id");--> statement-breakpoint
CREATE INDEX "uploads_feedback_idx" ON "uploads" USING btree ("feedback_id") WHERE feedback_id IS NOT NULL;--> statement-breakpoint
CREATE INDEX "admin_reads_feedback_idx" ON "admin_reads" USING btree ("feedback_id");--> statement-breakpoint
CREATE INDEX "slack_threads_lead_idx" ON "slack_threads" USING btree ("lead_feedback_id");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_event_idx" ON "webhook_deliveries" USING btree ("event_id");