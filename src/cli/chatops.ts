import { UsageError } from './args'
export async function runChatopsCommand(_argv: string[]): Promise<void> {
  throw new UsageError('chatops: not yet')
}
