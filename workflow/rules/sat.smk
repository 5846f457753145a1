# Stage: sat.
