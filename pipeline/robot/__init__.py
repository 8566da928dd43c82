"""Robots: the spec plugins register, its checks, kinematics and the scaffold for a new robot."""
