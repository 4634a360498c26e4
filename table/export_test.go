package table

// SelectOf is the $select QueryAs sends for the projection
// type P: the properties its fields are stored under.
func SelectOf[P any]() ([]string, error) {
	p, err := projectionPlan[P]()
	if err != nil {
		return nil, err
	}
	return p.selectList(), nil
}
