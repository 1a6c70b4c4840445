/** bench/flood.ts's page helper: the widget's main-thread fallback solver (widget/src/app/proof.ts), on window. */
import { solveInSlices } from '../widget/src/app/proof'

;(window as unknown as { __flSolveInSlices: typeof solveInSlices }).__flSolveInSlices = solveInSlices
