/** The raw (snake_case) columns every reader of a report starts from; each repo adds what it needs. */
import type { FeedbackStatus } from '../core/fsm'

export interface FeedbackCoreColumns {
  id: string
  org_id: string
  app_id: string
  status: FeedbackStatus
  version: number
  text: string
  url: string | null
  duplicate_of_id: string | null
}
