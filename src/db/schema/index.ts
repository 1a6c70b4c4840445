export * from './tenants'
export * from './feedback'
