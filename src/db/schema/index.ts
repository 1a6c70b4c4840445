export * from './tenants'
export * from './feedback'
export * from './uploads'
export * from './agents'
