/** Loaded before the test files (bunfig.toml [test] preload); its afterAll runs once all of them have. */
import { afterAll } from 'bun:test'
import { removeTempDirs } from './temp-dirs'

afterAll(removeTempDirs)
