"""balancer."""
