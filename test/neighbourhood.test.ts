/** Neighbourhood densities for /similar's order (src/dedup/neighbourhood.ts): the mean, the scaling, staleness. */
import { expect, test } from 'bun:test'
import { Densities, DENSITY_NEIGHBOURS, densityOf, scaledScore } from '../src/dedup/neighbourhood'

test('a density is the mean of the best 7 scores; fewer scores count the missing ones as 0', () => {
  expect(DENSITY_NEIGHBOURS).toBe(7)
  expect(densityOf([0.1, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2])).toBeCloseTo((0.9 + 0.8 + 0.7 + 0.6 + 0.5 + 0.4 + 0.3) / 7, 10)
  expect(densityOf([0.7, 0.7])).toBeCloseTo(0.2, 10)
  expect(densityOf([])).toBe(0)
})

test('a crowded candidate loses half its density difference to the query; a lonely one gains it', () => {
  expect(scaledScore(0.66, 0.4, 0.9)).toBeCloseTo(0.41, 10)
  expect(scaledScore(0.61, 0.4, 0.1)).toBeCloseTo(0.76, 10)
  expect(scaledScore(0.5, 0.3, 0.3)).toBe(0.5)
})

test('a density is fresh until the App has indexed 5 % more reports, or 20 more while it is small; removed with its report', () => {
  const d = new Densities()
  d.set('a', 0.42, 100)
  expect(d.get('a', 100)).toBe(0.42)
  expect(d.get('a', 120)).toBe(0.42)
  expect(d.get('a', 121)).toBeUndefined()
  d.set('b', 0.3, 10_000)
  expect(d.get('b', 10_500)).toBe(0.3)
  expect(d.get('b', 10_501)).toBeUndefined()
  expect(d.get('missing', 0)).toBeUndefined()
  d.delete('a')
  expect(d.get('a', 100)).toBeUndefined()
  expect(d.size).toBe(1)
})
